# TFRCP (paper 004 §II-B) for ns-2 2.35, written in OTcl over Agent/Message.
#
# ns-2 has no TFRCP agent (the paper's code was never merged), so the ns-2
# export carries this one: a second, independent implementation of the
# paper's sender and receiver, written from the paper and docs/papers.md
# rather than translated from satcc_proto::tfrcp, so that a cross-check of
# the two can catch a misreading in either. Every data packet and ACK is a
# real ns-2 packet (Agent/Message, packetSize_ on the wire); the protocol
# logic runs in OTcl on each arrival. The choices the paper leaves open
# follow the satcc sender's documented readings (module notes of
# satcc_proto::tfrcp::sender), as they define the protocol under test:
#   - x and y count every packet once, when it and all older packets are
#     decided (the paper's [j, a], plus timed-out packets above a);
#   - a round that decides nothing keeps its rate;
#   - a packet times out when its timeout limit (send time + B at send
#     time) and send time + the current B are both before t_i;
#   - R and B follow RFC 6298 (first sample: SRTT = r, RTTVAR = r/2;
#     B = SRTT + max(G, 4 RTTVAR) clamped to [minrto, maxrto]), only the
#     first ACK of a packet is sampled;
#   - packets are clocked out evenly at 1/r (nominal send times advance by
#     1/r; a rate change brings the next send forward to one new interval
#     after the last send).

proc tfrcp_pftk {r p b t0 wmax} {
    # Full PFTK model with Wmax (docs/papers.md), packets/s.
    if {$p <= 0.0} { return [expr {$wmax / $r}] }
    if {$p >= 1.0} { return [expr {1.0 / (64.0 * $t0)}] }
    set q1 [expr {1.0 - $p}]
    set k [expr {(2.0 + $b) / (3.0 * $b)}]
    set wu [expr {$k + sqrt(8.0 * $q1 / (3.0 * $b * $p) + $k * $k)}]
    set g [expr {1.0 + $p + 2*$p**2 + 4*$p**3 + 8*$p**4 + 16*$p**5 + 32*$p**6}]
    if {$wu < $wmax} {
        set w $wu
        set den [expr {$r * ($b / 2.0 * $w + 1.0)}]
    } else {
        set w $wmax
        set den [expr {$r * ($b / 8.0 * $w + $q1 / ($p * $w) + 2.0)}]
    }
    set q [expr {min(1.0, (1.0 - $q1**3) * (1.0 + $q1**3 * (1.0 - $q1**($w - 3.0))) / (1.0 - $q1**$w))}]
    return [expr {($q1 / $p + $w + $q / $q1) / ($den + $q * $g * $t0 / $q1)}]
}

Class Agent/Message/TfrcpSink -superclass Agent/Message

Agent/Message/TfrcpSink instproc init {} {
    $self next
    $self instvar hi_ npkts_ dups_
    set hi_ -1
    set npkts_ 0
    set dups_ 0
}

# One ACK per data packet: its sequence number and timestamp, and bit i set
# when packet seq-i has been received (i = 0..7).
Agent/Message/TfrcpSink instproc recv {msg} {
    $self instvar hi_ npkts_ dups_ got_
    lassign $msg seq ts
    if {$seq <= $hi_ - 1024} { return }
    if {[info exists got_($seq)]} {
        incr dups_
    } else {
        set got_($seq) 1
        incr npkts_
    }
    while {$seq > $hi_} {
        incr hi_
        unset -nocomplain got_([expr {$hi_ - 1024}])
    }
    set v 0
    for {set i 0} {$i < 8} {incr i} {
        if {[info exists got_([expr {$seq - $i}])]} { set v [expr {$v | (1 << $i)}] }
    }
    $self send "$seq $ts $v"
}

Class Agent/Message/Tfrcp -superclass Agent/Message

# cfg: a dict with r0 strategy (s1|s2|s3) m k base spread wmax b minrto
# maxrto initrto g minrate maxrate rngseed.
Agent/Message/Tfrcp instproc setup {cfg} {
    $self instvar c_ rate_ srtt_ rttvar_ base_ next_ hi_ gen_ due_ last_ \
        running_ ndatapack_ rounds_ doubled_ nlost_ nrecv_ rng_ lossy_p_ lossyn_
    set c_ $cfg
    set rate_ [dict get $cfg r0]
    set srtt_ -1
    set rttvar_ 0
    set base_ 0
    set next_ 0
    set hi_ -1
    set gen_ 0
    set due_ 0
    set last_ -1
    set running_ 0
    set ndatapack_ 0
    set rounds_ 0
    set doubled_ 0
    set nlost_ 0
    set nrecv_ 0
    set lossy_p_ 0.0
    set lossyn_ 0
    set rng_ [new RNG]
    $rng_ seed [dict get $cfg rngseed]
}

Agent/Message/Tfrcp instproc rto {} {
    $self instvar c_ srtt_ rttvar_
    if {$srtt_ < 0} {
        set raw [dict get $c_ initrto]
    } else {
        set raw [expr {$srtt_ + max([dict get $c_ g], 4.0 * $rttvar_)}]
    }
    return [expr {min(max($raw, [dict get $c_ minrto]), [dict get $c_ maxrto])}]
}

Agent/Message/Tfrcp instproc round_len {} {
    $self instvar c_ srtt_ rng_
    switch [dict get $c_ strategy] {
        s1 { set m [dict get $c_ m] }
        s2 {
            if {$srtt_ < 0} { set m @S2_FALLBACK_M@ } else { set m [expr {[dict get $c_ k] * $srtt_}] }
        }
        s3 { set m [expr {[dict get $c_ base] + [$rng_ uniform 0 [dict get $c_ spread]]}] }
    }
    return [expr {max($m, 0.001)}]
}

Agent/Message/Tfrcp instproc start {} {
    global ns
    $self instvar running_ due_
    set running_ 1
    set due_ [$ns now]
    $self new_round
    $self tick 0
}

Agent/Message/Tfrcp instproc stop {} {
    $self instvar running_
    set running_ 0
}

Agent/Message/Tfrcp instproc new_round {} {
    global ns
    $ns at [expr {[$ns now] + [$self round_len]}] "$self close_round"
}

# Send one packet and schedule the next, 1/r after this one's nominal time.
Agent/Message/Tfrcp instproc tick {g} {
    global ns
    $self instvar gen_ running_ due_ last_ next_ sent_ lim_ st_ ndatapack_ rate_
    if {$g != $gen_ || !$running_} { return }
    set now [$ns now]
    set sent_($next_) $now
    set lim_($next_) [expr {$now + [$self rto]}]
    set st_($next_) u
    $self send [format "%d %.9f" $next_ $now]
    incr next_
    incr ndatapack_
    set last_ $now
    set ipi [expr {1.0 / $rate_}]
    set due_ [expr {$due_ + $ipi}]
    if {$due_ < $now} { set due_ [expr {$now + $ipi}] }
    $ns at $due_ "$self tick $gen_"
}

Agent/Message/Tfrcp instproc recv {msg} {
    global ns
    $self instvar base_ next_ hi_ sent_ st_ acked_ srtt_ rttvar_
    lassign $msg k ts v
    set now [$ns now]
    if {$k >= $next_ || $k < $base_ || $ts > $now} { return }
    if {![info exists acked_($k)]} {
        set acked_($k) 1
        set r [expr {max($now - $ts, 1e-5)}]
        if {$srtt_ < 0} {
            set srtt_ $r
            set rttvar_ [expr {$r / 2.0}]
        } else {
            set rttvar_ [expr {0.75 * $rttvar_ + 0.25 * abs($srtt_ - $r)}]
            set srtt_ [expr {0.875 * $srtt_ + 0.125 * $r}]
        }
    }
    set st_($k) r
    for {set i 1} {$i < 8} {incr i} {
        if {!($v & (1 << $i))} { continue }
        set q [expr {$k - $i}]
        if {$q < $base_} { break }
        set st_($q) r
    }
    if {$k > $hi_} { set hi_ $k }
}

# End of round i at t_i (paper 004 §II-B): mark, count, set r_{i+1}.
Agent/Message/Tfrcp instproc close_round {} {
    global ns
    $self instvar c_ base_ next_ hi_ sent_ lim_ st_ acked_ rate_ srtt_ \
        rounds_ doubled_ nlost_ nrecv_ gen_ due_ last_ running_ lossy_p_ lossyn_
    set now [$ns now]
    set b [$self rto]
    # Unknown below the highest ACKed: lost.
    for {set q $base_} {$q < $hi_ && $q < $next_} {incr q} {
        if {$st_($q) eq "u"} { set st_($q) l }
    }
    # Timeout limit passed: lost.
    for {set q $base_} {$q < $next_} {incr q} {
        if {$sent_($q) + $b >= $now} { break }
        if {$st_($q) eq "u" && $lim_($q) < $now} { set st_($q) l }
    }
    set x 0
    set y 0
    while {$base_ < $next_ && $st_($base_) ne "u"} {
        if {$st_($base_) eq "r"} { incr x } else { incr y }
        unset sent_($base_) lim_($base_) st_($base_)
        unset -nocomplain acked_($base_)
        incr base_
    }
    incr rounds_
    incr nrecv_ $x
    incr nlost_ $y
    if {$x + $y == 0} {
        set next $rate_
    } elseif {$y == 0} {
        incr doubled_
        set next [expr {2.0 * $rate_}]
    } else {
        set p [expr {double($y) / ($x + $y)}]
        set lossy_p_ [expr {$lossy_p_ + $p}]
        incr lossyn_
        set r [expr {$srtt_ < 0 ? $b : max($srtt_, 1e-5)}]
        set next [tfrcp_pftk $r $p [dict get $c_ b] $b [dict get $c_ wmax]]
    }
    set rate_ [expr {min(max($next, [dict get $c_ minrate]), [dict get $c_ maxrate])}]
    # A faster rate takes effect at once: the next send moves to one new
    # interval after the last one if that is sooner.
    if {$running_ && $last_ >= 0} {
        set d [expr {max($last_ + 1.0 / $rate_, $now)}]
        if {$d < $due_} {
            set due_ $d
            incr gen_
            $ns at $due_ "$self tick $gen_"
        }
    }
    $self new_round
}

# rounds, rounds that doubled, packets counted lost, packets counted
# received, mean p of the rounds with loss, final rate (packets/s).
Agent/Message/Tfrcp instproc stats {} {
    $self instvar rounds_ doubled_ nlost_ nrecv_ lossy_p_ lossyn_ rate_
    set mp [expr {$lossyn_ > 0 ? $lossy_p_ / $lossyn_ : 0.0}]
    return "$rounds_ $doubled_ $nlost_ $nrecv_ $mp $rate_"
}
