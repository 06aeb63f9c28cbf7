//! Per-flow routes: the answers of the full static route table
//! ([`NetDef::routes_over`]) for the paths flows use, in memory that grows
//! with the links and the routed paths instead of nodes².
//!
//! # Same routes as the table
//!
//! The table is a breadth-first search outward from each destination `d`
//! over incoming links, scanned in link order: a node takes the link by
//! which it is first discovered. Nodes of one BFS level are discovered (and
//! so dequeued) in the order of the reversed link sequence of their tree path
//! to `d`, compared lexicographically, and a node's tree parent is the
//! neighbour that comes first in that order. By induction the table's path
//! from `s` to `d` is the fewest-hop path whose link indices, read from `d`
//! backwards, are lexicographically smallest.
//!
//! That path needs no full BFS: a bidirectional search finds the hop
//! distance `h` and the nodes at each distance `k` from `s` that lie on a
//! fewest-hop path; then, from `d` back to `s`, each step takes the
//! lowest-numbered up link into the current node from a node at distance
//! `k - 1` from `s` (link indices are unique, so the greedy choice is the
//! lexicographic minimum). Hubs (the routers of a dumbbell with thousands of
//! access links, the core satellites of a constellation) are never scanned
//! whole when a frontier on the other side is small: adjacency between two
//! small node sets is tested by binary search in the out-links sorted by
//! head. Where pairs towards one destination cost more than a BFS would, the
//! remaining sources of that destination are read off one BFS column exactly
//! as the table builds it.

use satcc_proto::Duration;

use crate::topology::NetDef;

const NONE: u32 = u32::MAX;

#[inline]
fn is_up(up: &[bool], li: u32) -> bool {
    up.get(li as usize).copied().unwrap_or(true)
}

/// Fingerprint of a link-state vector (as [`NetDef::routes_over`] reads it:
/// links past its end are up), to check that lookups use the state the
/// routes were built for.
fn fingerprint(up: &[bool], n_links: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for i in 0..n_links {
        h ^= u64::from(is_up(up, i as u32));
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Links by endpoint, all of them (up or down: `up` is applied as they are
/// scanned, so one adjacency serves every snapshot).
#[derive(Clone, Debug, Default)]
struct Adj {
    from: Vec<u32>,
    to: Vec<u32>,
    /// `out[out_start[u]..out_start[u + 1]]`: links leaving `u`, sorted by
    /// (head, index).
    out_start: Vec<u32>,
    out: Vec<u32>,
    /// `inc[in_start[v]..in_start[v + 1]]`: links entering `v`, by index
    /// (the table's BFS scan order).
    in_start: Vec<u32>,
    inc: Vec<u32>,
}

impl Adj {
    fn new(net: &NetDef) -> Adj {
        let n = net.nodes.len();
        let from: Vec<u32> = net.links.iter().map(|l| l.from).collect();
        let to: Vec<u32> = net.links.iter().map(|l| l.to).collect();
        let starts = |key: &[u32]| {
            let mut s = vec![0u32; n + 1];
            for &k in key {
                s[k as usize + 1] += 1;
            }
            for i in 0..n {
                s[i + 1] += s[i];
            }
            s
        };
        // Counting sorts, stable: incoming by (head, index); outgoing by
        // (tail, head, index), from the incoming order.
        let in_start = starts(&to);
        let mut inc = vec![0u32; to.len()];
        let mut fill = in_start.clone();
        for (li, &v) in to.iter().enumerate() {
            inc[fill[v as usize] as usize] = li as u32;
            fill[v as usize] += 1;
        }
        let out_start = starts(&from);
        let mut out = vec![0u32; from.len()];
        let mut fill = out_start.clone();
        for &li in &inc {
            let u = from[li as usize] as usize;
            out[fill[u] as usize] = li;
            fill[u] += 1;
        }
        Adj {
            from,
            to,
            out_start,
            out,
            in_start,
            inc,
        }
    }

    fn n_nodes(&self) -> usize {
        self.out_start.len() - 1
    }

    #[inline]
    fn outs(&self, u: u32) -> &[u32] {
        &self.out[self.out_start[u as usize] as usize..self.out_start[u as usize + 1] as usize]
    }

    #[inline]
    fn ins(&self, v: u32) -> &[u32] {
        &self.inc[self.in_start[v as usize] as usize..self.in_start[v as usize + 1] as usize]
    }

    /// The lowest-numbered up link from `u` to `v`.
    #[inline]
    fn min_link(&self, up: &[bool], u: u32, v: u32) -> Option<u32> {
        let o = self.outs(u);
        let p = o.partition_point(|&l| self.to[l as usize] < v);
        o[p..]
            .iter()
            .take_while(|&&l| self.to[l as usize] == v)
            .copied()
            .find(|&l| is_up(up, l))
    }

    fn out_degree(&self, nodes: &[u32]) -> u64 {
        nodes.iter().map(|&u| self.outs(u).len() as u64).sum()
    }

    fn in_degree(&self, nodes: &[u32]) -> u64 {
        nodes.iter().map(|&v| self.ins(v).len() as u64).sum()
    }

    fn heap_bytes(&self) -> usize {
        4 * (self.from.capacity()
            + self.to.capacity()
            + self.out_start.capacity()
            + self.out.capacity()
            + self.in_start.capacity()
            + self.inc.capacity())
    }
}

/// Working memory of the searches: per-node labels (all `NONE` between
/// searches; each search resets what it touched) and level lists.
struct Scratch {
    /// Hop distance from the source, where known.
    ds: Vec<u32>,
    /// Hop distance to the destination, where known.
    dd: Vec<u32>,
    /// Forward levels: level `k` is `fwd[fstart[k]..fstart[k + 1]]`.
    fwd: Vec<u32>,
    fstart: Vec<u32>,
    /// Backward levels (distance to the destination), likewise.
    bwd: Vec<u32>,
    bstart: Vec<u32>,
    /// Past the meeting point: nodes at distance `k` from the source.
    mid: Vec<u32>,
    mstart: Vec<u32>,
    /// Column BFS: the link each node takes (valid where `dd` is set).
    col: Vec<u32>,
    /// The previous level while the next one is built.
    prev: Vec<u32>,
}

impl Scratch {
    fn new(n: usize) -> Scratch {
        Scratch {
            ds: vec![NONE; n],
            dd: vec![NONE; n],
            fwd: Vec::new(),
            fstart: Vec::new(),
            bwd: Vec::new(),
            bstart: Vec::new(),
            mid: Vec::new(),
            mstart: Vec::new(),
            col: Vec::new(),
            prev: Vec::new(),
        }
    }
}

fn level(start: &[u32], k: usize) -> std::ops::Range<usize> {
    start[k] as usize..start[k + 1] as usize
}

/// Appends the table's path from `s` to `d` (links in order) to `path`;
/// false, with `path` unchanged, if there is none. Adds the links and pairs
/// examined to `work`.
fn pair_path(
    g: &Adj,
    up: &[bool],
    s: u32,
    d: u32,
    scr: &mut Scratch,
    path: &mut Vec<u32>,
    work: &mut u64,
) -> bool {
    if s == d {
        return true;
    }
    let found = meet(g, up, s, d, scr, work);
    if let Some((i, j)) = found {
        trace(g, up, s, d, i, j, scr, path, work);
    }
    let Scratch {
        ds, dd, fwd, bwd, ..
    } = scr;
    for &u in fwd.iter().chain(bwd.iter()) {
        ds[u as usize] = NONE;
        dd[u as usize] = NONE;
    }
    found.is_some()
}

/// Bidirectional BFS from `s` (over out-links) and `d` (over in-links),
/// level by level. Returns the levels `(i, j)` at which they meet: the
/// distance is `i + j + 1`, every node at distance `<= i` from `s` is in
/// the forward levels and every node at distance `<= j` from `d` in the
/// backward ones, labelled exactly. `None`: no path.
fn meet(
    g: &Adj,
    up: &[bool],
    s: u32,
    d: u32,
    scr: &mut Scratch,
    work: &mut u64,
) -> Option<(usize, usize)> {
    let Scratch {
        ds,
        dd,
        fwd,
        fstart,
        bwd,
        bstart,
        ..
    } = scr;
    fwd.clear();
    bwd.clear();
    fstart.clear();
    bstart.clear();
    fwd.push(s);
    fstart.extend([0, 1]);
    ds[s as usize] = 0;
    bwd.push(d);
    bstart.extend([0, 1]);
    dd[d as usize] = 0;
    // Invariant: no path of i + j hops or fewer.
    loop {
        let (i, j) = (fstart.len() - 2, bstart.len() - 2);
        let fr = level(fstart, i);
        let br = level(bstart, j);
        if fr.is_empty() || br.is_empty() {
            return None;
        }
        let oc = g.out_degree(&fwd[fr.clone()]);
        let ic = g.in_degree(&bwd[br.clone()]);
        let pc = (fr.len() * br.len()) as u64;
        *work += (fr.len() + br.len()) as u64;
        if pc <= oc.min(ic) {
            // A link from forward level i to backward level j?
            *work += pc;
            let hit = fwd[fr.clone()].iter().any(|&f| {
                bwd[br.clone()]
                    .iter()
                    .any(|&b| g.min_link(up, f, b).is_some())
            });
            if hit {
                return Some((i, j));
            }
        }
        if oc <= ic {
            *work += oc;
            let mut met = false;
            'expand: for x in fr {
                let f = fwd[x];
                for &li in g.outs(f) {
                    if !is_up(up, li) {
                        continue;
                    }
                    let u = g.to[li as usize];
                    if dd[u as usize] != NONE {
                        met = true;
                        break 'expand;
                    }
                    if ds[u as usize] == NONE {
                        ds[u as usize] = (i + 1) as u32;
                        fwd.push(u);
                    }
                }
            }
            if met {
                // Roll back the partial level: labels stay exact.
                for &u in &fwd[fstart[i + 1] as usize..] {
                    ds[u as usize] = NONE;
                }
                fwd.truncate(fstart[i + 1] as usize);
                return Some((i, j));
            }
            fstart.push(fwd.len() as u32);
        } else {
            *work += ic;
            let mut met = false;
            'expand: for x in br {
                let b = bwd[x];
                for &li in g.ins(b) {
                    if !is_up(up, li) {
                        continue;
                    }
                    let u = g.from[li as usize];
                    if ds[u as usize] != NONE {
                        met = true;
                        break 'expand;
                    }
                    if dd[u as usize] == NONE {
                        dd[u as usize] = (j + 1) as u32;
                        bwd.push(u);
                    }
                }
            }
            if met {
                for &u in &bwd[bstart[j + 1] as usize..] {
                    dd[u as usize] = NONE;
                }
                bwd.truncate(bstart[j + 1] as usize);
                return Some((i, j));
            }
            bstart.push(bwd.len() as u32);
        }
    }
}

/// After [`meet`] at `(i, j)`: labels the nodes past forward level `i` that
/// are at distance `k` from `s` on a fewest-hop path (they are the nodes of
/// backward level `h - k` reachable from level `k - 1`), then walks back
/// from `d` taking, at each node, the lowest-numbered up link from a node one
/// hop closer to `s`.
#[allow(clippy::too_many_arguments)]
fn trace(
    g: &Adj,
    up: &[bool],
    s: u32,
    d: u32,
    i: usize,
    j: usize,
    scr: &mut Scratch,
    path: &mut Vec<u32>,
    work: &mut u64,
) {
    let Scratch {
        ds,
        dd,
        fwd,
        fstart,
        bwd,
        bstart,
        mid,
        mstart,
        prev,
        ..
    } = scr;
    let h = i + j + 1;
    mid.clear();
    mstart.clear();
    mstart.push(0);
    // mid level m holds distance i + 1 + m.
    for k in i + 1..=h {
        prev.clear();
        if k - 1 == i {
            prev.extend_from_slice(&fwd[level(fstart, i)]);
        } else {
            prev.extend_from_slice(&mid[level(mstart, k - 2 - i)]);
        }
        let prev: &[u32] = prev;
        let bl = &bwd[level(bstart, h - k)];
        let pc = (prev.len() * bl.len()) as u64;
        let oc = g.out_degree(prev);
        let ic = g.in_degree(bl);
        let (km1, kk, want_dd) = ((k - 1) as u32, k as u32, (h - k) as u32);
        if pc <= oc.min(ic) {
            *work += pc;
            for &b in bl {
                if prev.iter().any(|&y| g.min_link(up, y, b).is_some()) {
                    ds[b as usize] = kk;
                    mid.push(b);
                }
            }
        } else if oc <= ic {
            *work += oc;
            for &y in prev {
                for &li in g.outs(y) {
                    let u = g.to[li as usize] as usize;
                    if is_up(up, li) && dd[u] == want_dd && ds[u] == NONE {
                        ds[u] = kk;
                        mid.push(u as u32);
                    }
                }
            }
        } else {
            *work += ic;
            for &b in bl {
                let hit = g
                    .ins(b)
                    .iter()
                    .any(|&li| is_up(up, li) && ds[g.from[li as usize] as usize] == km1);
                if hit {
                    ds[b as usize] = kk;
                    mid.push(b);
                }
            }
        }
        mstart.push(mid.len() as u32);
    }
    debug_assert_eq!(ds[d as usize], h as u32);
    let base = path.len();
    let mut x = d;
    for k in (0..h).rev() {
        let cand = if k <= i {
            &fwd[level(fstart, k)]
        } else {
            &mid[level(mstart, k - 1 - i)]
        };
        let ins = g.ins(x);
        let li = if cand.len() < ins.len() {
            *work += cand.len() as u64;
            cand.iter().filter_map(|&y| g.min_link(up, y, x)).min()
        } else {
            *work += ins.len() as u64;
            ins.iter()
                .copied()
                .find(|&li| is_up(up, li) && ds[g.from[li as usize] as usize] == k as u32)
        };
        let li = li.expect("a node on a fewest-hop path has a predecessor");
        path.push(li);
        x = g.from[li as usize];
    }
    debug_assert_eq!(x, s);
    path[base..].reverse();
    // The mid nodes are backward-level nodes: pair_path's reset covers them.
}

/// The table's BFS column towards `d` (over incoming up links in link
/// order), stopped once every node of `want` is discovered; appends the path
/// of each `want` node (in order) to `path`, recording its end offset in
/// `ends` or `None` if it has no route.
fn column_paths(
    g: &Adj,
    up: &[bool],
    d: u32,
    want: &[u32],
    scr: &mut Scratch,
    path: &mut Vec<u32>,
    ends: &mut Vec<Option<u32>>,
) {
    let n = g.n_nodes();
    if scr.col.len() != n {
        scr.col = vec![NONE; n];
    }
    let Scratch {
        ds, dd, col, fwd, ..
    } = scr;
    // ds marks the wanted nodes; fwd is the BFS queue.
    let mut left = 0usize;
    for &s in want {
        if s != d && ds[s as usize] == NONE {
            ds[s as usize] = 0;
            left += 1;
        }
    }
    fwd.clear();
    fwd.push(d);
    dd[d as usize] = 0;
    let mut head = 0;
    while head < fwd.len() && left > 0 {
        let v = fwd[head];
        head += 1;
        for &li in g.ins(v) {
            if !is_up(up, li) {
                continue;
            }
            let u = g.from[li as usize] as usize;
            if dd[u] == NONE {
                dd[u] = dd[v as usize] + 1;
                col[u] = li;
                fwd.push(u as u32);
                if ds[u] == 0 {
                    left -= 1;
                    if left == 0 {
                        break;
                    }
                }
            }
        }
    }
    for &s in want {
        if s != d && dd[s as usize] == NONE {
            ends.push(None);
            continue;
        }
        let mut x = s;
        while x != d {
            let li = col[x as usize];
            path.push(li);
            x = g.to[li as usize];
        }
        ends.push(Some(path.len() as u32));
    }
    for &u in fwd.iter() {
        dd[u as usize] = NONE;
        col[u as usize] = NONE;
    }
    for &s in want {
        ds[s as usize] = NONE;
    }
}

/// Routes kept per flow: memory grows with what is routed, not nodes².
///
/// Answers are those of [`NetDef::routes_over`]`(up)` (same fewest-hop
/// paths, same tie-break). For each flow the forward path (source to sink)
/// and the reverse path (sink to source) are stored; a lookup at a node off
/// those paths (a packet in flight across a topology snapshot) is computed
/// on demand.
#[derive(Clone, Debug)]
pub struct Routes {
    adj: Adj,
    /// Every distinct (source, destination) path's links, concatenated,
    /// each with its tail node (`[link, from]`: the on-path lookup reads
    /// one entry).
    hops: Vec<[u32; 2]>,
    /// Path `p` is `hops[path_start[p]..path_start[p + 1]]`.
    path_start: Vec<u32>,
    /// Per flow: [forward, reverse] path ids, `NONE` without a route.
    flow_paths: Vec<[u32; 2]>,
    /// Per flow, what a packet on its path needs, in one place: the
    /// simulator asks for every hop of every packet.
    fast: Vec<FlowRoute>,
    /// [`fingerprint`] of the `up` the routes were built over.
    up_fp: u64,
}

/// Hops of a flow's two paths kept in its [`FlowRoute`]: a dumbbell's
/// three and three fit, and what fits makes the entry one cache line.
const NEAR: usize = 6;

/// What a packet of a flow needs at every hop, in one cache line: the
/// flow's ends and its two paths, their hops (`[link, from]`) in `near`
/// when both fit there (forward then reverse; `inline`), else the spans of
/// [`Routes::hops`] they take in `near[0]` (forward) and `near[1]`. With
/// the spans here and the hops in `hops` alone a lookup read two lines in
/// two arrays, and with 512 flows both missed the first-level cache
/// (issue 28).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
struct FlowRoute {
    source: u32,
    sink: u32,
    /// Hops of the forward path in `near` (when `inline`).
    nf: u16,
    /// Hops of the reverse path in `near`, after the forward ones.
    nr: u16,
    inline: bool,
    near: [[u32; 2]; NEAR],
}

impl Routes {
    /// Per-flow routes over the links with `up[i]` (all true at start;
    /// links past the end of `up` count as up, as in
    /// [`NetDef::routes_over`]).
    pub fn build(net: &NetDef, up: &[bool]) -> Routes {
        let budget = (net.nodes.len() + net.links.len()) as u64;
        Self::build_with(net, up, budget)
    }

    /// [`Routes::build`], switching a destination to one BFS column once its
    /// pair searches have examined more than `budget` links and pairs (0:
    /// always columns; `u64::MAX`: never).
    fn build_with(net: &NetDef, up: &[bool], budget: u64) -> Routes {
        Self::build_on(Adj::new(net), net, up, budget)
    }

    /// Routes over a new link state (a topology snapshot) of the same
    /// network: as [`Routes::build`], reusing the link adjacency.
    pub fn update(&mut self, net: &NetDef, up: &[bool]) {
        debug_assert_eq!(self.adj.from.len(), net.links.len());
        let adj = std::mem::take(&mut self.adj);
        let budget = (net.nodes.len() + net.links.len()) as u64;
        *self = Self::build_on(adj, net, up, budget);
    }

    fn build_on(adj: Adj, net: &NetDef, up: &[bool], budget: u64) -> Routes {
        let mut scr = Scratch::new(net.nodes.len());
        // Distinct (source, destination) pairs, grouped by destination.
        let mut pairs: Vec<(u32, u32)> = net
            .endpoints
            .iter()
            .flat_map(|&(s, d)| [(d, s), (s, d)])
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let mut links = Vec::new();
        let mut ends: Vec<Option<u32>> = Vec::with_capacity(pairs.len());
        let mut want = Vec::new();
        let mut g0 = 0;
        while g0 < pairs.len() {
            let d = pairs[g0].0;
            let g1 = g0 + pairs[g0..].partition_point(|p| p.0 == d);
            let mut work = 0u64;
            let mut k = g0;
            while k < g1 && work < budget {
                let s = pairs[k].1;
                let ok = pair_path(&adj, up, s, d, &mut scr, &mut links, &mut work);
                ends.push(ok.then_some(links.len() as u32));
                k += 1;
            }
            if k < g1 {
                want.clear();
                want.extend(pairs[k..g1].iter().map(|p| p.1));
                column_paths(&adj, up, d, &want, &mut scr, &mut links, &mut ends);
            }
            g0 = g1;
        }
        // Path ids are pair indices; a pair without a route keeps an empty
        // span and is marked NONE in the flows' ids.
        let mut path_start = Vec::with_capacity(pairs.len() + 1);
        path_start.push(0u32);
        let mut last = 0u32;
        for end in &ends {
            last = end.unwrap_or(last);
            path_start.push(last);
        }
        let id = |s: u32, d: u32| -> u32 {
            let p = pairs
                .binary_search(&(d, s))
                .expect("every flow pair is listed");
            if ends[p].is_some() {
                p as u32
            } else {
                NONE
            }
        };
        let flow_paths = net
            .endpoints
            .iter()
            .map(|&(s, d)| [id(s, d), id(d, s)])
            .collect();
        links.shrink_to_fit();
        let span = |pid: u32| {
            if pid == NONE {
                (0, 0)
            } else {
                (path_start[pid as usize], path_start[pid as usize + 1])
            }
        };
        let fast = net
            .endpoints
            .iter()
            .zip(&flow_paths)
            .map(|(&(source, sink), &[f, r]): (&(u32, u32), &[u32; 2])| {
                let (fwd, rev) = (span(f), span(r));
                let (nf, nr) = ((fwd.1 - fwd.0) as usize, (rev.1 - rev.0) as usize);
                let mut route = FlowRoute {
                    source,
                    sink,
                    ..FlowRoute::default()
                };
                if nf + nr <= NEAR {
                    let hop = |&li: &u32| [li, adj.from[li as usize]];
                    let fl = links[fwd.0 as usize..fwd.1 as usize].iter().map(hop);
                    let rl = links[rev.0 as usize..rev.1 as usize].iter().map(hop);
                    for (slot, h) in route.near.iter_mut().zip(fl.chain(rl)) {
                        *slot = h;
                    }
                    // At most NEAR: they fit a u16.
                    (route.nf, route.nr) = (nf as u16, nr as u16);
                    route.inline = true;
                } else {
                    route.near[0] = [fwd.0, fwd.1];
                    route.near[1] = [rev.0, rev.1];
                }
                route
            })
            .collect();
        let hops = links
            .iter()
            .map(|&li| [li, adj.from[li as usize]])
            .collect();
        Routes {
            adj,
            path_start,
            flow_paths,
            fast,
            hops,
            up_fp: fingerprint(up, net.links.len()),
        }
    }

    /// The link a packet of flow `flow` at `node` heading to `dst` takes,
    /// `None` if there is no route. `hops` is how many hops the packet has
    /// taken (`INITIAL_TTL - ttl` in the simulator): with it a packet on its
    /// flow's path is found in O(1); a wrong value only costs a scan of the
    /// path. `up` must be the link state the routes were built over.
    ///
    /// `dst` is the flow's sink (data) or its source (ACKs). At a node off
    /// the flow's path (only a packet in flight across a snapshot) the
    /// answer is searched for on the spot, O(links) at worst.
    #[inline]
    pub fn next_hop(
        &self,
        net: &NetDef,
        up: &[bool],
        flow: u32,
        dst: u32,
        node: u32,
        hops: u32,
    ) -> Option<u32> {
        if let Some(li) = self.hop_on_path(flow, dst, node, hops) {
            return Some(li);
        }
        self.next_hop_slow(net, up, flow, dst, node, hops)
    }

    /// The common case of [`Routes::next_hop`]: a packet on its flow's
    /// path, `hops` links along (`None` if it is not, or `hops` is wrong).
    #[inline(always)]
    fn hop_on_path(&self, flow: u32, dst: u32, node: u32, hops: u32) -> Option<u32> {
        let r = self.fast.get(flow as usize)?;
        let fwd = dst == r.sink;
        if !fwd && dst != r.source {
            return None;
        }
        let [li, from] = if r.inline {
            let (off, n) = if fwd { (0, r.nf) } else { (r.nf, r.nr) };
            if hops >= u32::from(n) {
                return None;
            }
            // Below NEAR: `off + n` is.
            *r.near.get(usize::from(off) + hops as usize)?
        } else {
            let [a, b] = if fwd { r.near[0] } else { r.near[1] };
            // In u64, where two u32 cannot overflow (a saturating u32 add
            // cost two more instructions on every hop); below `b`, a u32,
            // it fits any usize.
            let i = u64::from(a) + u64::from(hops);
            if i >= u64::from(b) {
                return None;
            }
            *self.hops.get(i as usize)?
        };
        (from == node).then_some(li)
    }

    /// [`Routes::next_hop`] when the hint misses: a scan of the path, else
    /// a search.
    #[inline(never)]
    fn next_hop_slow(
        &self,
        net: &NetDef,
        up: &[bool],
        flow: u32,
        dst: u32,
        node: u32,
        hops: u32,
    ) -> Option<u32> {
        if node == dst {
            return None;
        }
        let ends = net.endpoints.get(flow as usize).copied();
        let (pid, start) = match (ends, self.flow_paths.get(flow as usize)) {
            (Some((s, d)), Some(&[fwd, _])) if dst == d => (fwd, s),
            (Some((s, d)), Some(&[_, rev])) if dst == s => (rev, d),
            _ => {
                debug_assert!(false, "flow {flow} does not end at node {dst}");
                return self.off_path(up, node, dst);
            }
        };
        if pid == NONE {
            if node == start {
                return None;
            }
            return self.off_path(up, node, dst);
        }
        let p = &self.hops
            [self.path_start[pid as usize] as usize..self.path_start[pid as usize + 1] as usize];
        if let Some(&[li, from]) = p.get(hops as usize) {
            if from == node {
                return Some(li);
            }
        }
        if let Some(&[li, _]) = p.iter().find(|&&[_, from]| from == node) {
            return Some(li);
        }
        self.off_path(up, node, dst)
    }

    /// The table's entry for (`node`, `dst`), searched for.
    #[cold]
    fn off_path(&self, up: &[bool], node: u32, dst: u32) -> Option<u32> {
        debug_assert_eq!(
            fingerprint(up, self.adj.from.len()),
            self.up_fp,
            "next_hop's `up` differs from the one the routes were built over"
        );
        if node == dst || node as usize >= self.adj.n_nodes() || dst as usize >= self.adj.n_nodes()
        {
            return None;
        }
        let mut scr = Scratch::new(self.adj.n_nodes());
        let mut path = Vec::new();
        let mut work = 0;
        pair_path(&self.adj, up, node, dst, &mut scr, &mut path, &mut work);
        path.first().copied()
    }

    /// The links of flow `flow`'s forward path (source to sink), or with
    /// `reverse` of its reverse path (sink to source); `None` if it has no
    /// route.
    pub fn path(&self, flow: u32, reverse: bool) -> Option<Vec<u32>> {
        let pid = self.flow_paths.get(flow as usize)?[usize::from(reverse)];
        if pid == NONE {
            return None;
        }
        Some(
            self.hops[self.path_start[pid as usize] as usize
                ..self.path_start[pid as usize + 1] as usize]
                .iter()
                .map(|h| h[0])
                .collect(),
        )
    }

    /// Propagation-only RTT of flow `flow` (forward path delay + reverse
    /// path delay), `None` if either direction has no route.
    pub fn base_rtt(&self, net: &NetDef, flow: u32) -> Option<Duration> {
        let delay = |p: &[u32]| {
            p.iter().fold(Duration::ZERO, |acc, &li| {
                acc + net.links[li as usize].delay
            })
        };
        Some(delay(&self.path(flow, false)?) + delay(&self.path(flow, true)?))
    }

    /// Bytes held (for a test and for memory estimates).
    pub fn heap_bytes(&self) -> usize {
        self.adj.heap_bytes()
            + 4 * self.path_start.capacity()
            + 8 * self.flow_paths.capacity()
            + std::mem::size_of::<FlowRoute>() * self.fast.capacity()
            + 8 * self.hops.capacity()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::scenario::Scenario;
    use crate::topology::LinkDef;

    /// Strategies under test: auto, pair searches only, BFS columns only,
    /// and pairs then columns within one destination.
    const BUDGETS: [Option<u64>; 5] = [None, Some(u64::MAX), Some(0), Some(3), Some(12)];

    fn build(net: &NetDef, up: &[bool], budget: Option<u64>) -> Routes {
        match budget {
            None => Routes::build(net, up),
            Some(b) => Routes::build_with(net, up, b),
        }
    }

    fn table_hop(net: &NetDef, table: &[u32], node: u32, dst: u32) -> Option<u32> {
        let li = table[node as usize * net.nodes.len() + dst as usize];
        (li != u32::MAX).then_some(li)
    }

    /// The table's path from `s` to `d`.
    fn table_path(net: &NetDef, table: &[u32], s: u32, d: u32) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        let mut x = s;
        while x != d {
            let li = table_hop(net, table, x, d)?;
            out.push(li);
            x = net.links[li as usize].to;
        }
        Some(out)
    }

    /// Every flow, both directions, every node (on the path with the right
    /// and a wrong hop count, off it), and base RTTs, against the full
    /// table over `up`, for every build strategy.
    fn check(net: &NetDef, up: &[bool]) {
        let table = net.routes_over(up);
        for budget in BUDGETS {
            let r = build(net, up, budget);
            for (f, &(s, d)) in net.endpoints.iter().enumerate() {
                let f = f as u32;
                for (rev, (a, b)) in [(false, (s, d)), (true, (d, s))] {
                    let want = table_path(net, &table, a, b);
                    assert_eq!(r.path(f, rev), want, "flow {f} {a}->{b} budget {budget:?}");
                    // Along the path, as a packet sees it.
                    let mut x = a;
                    let mut hops = 0;
                    while x != b {
                        let got = r.next_hop(net, up, f, b, x, hops);
                        let exp = table_hop(net, &table, x, b);
                        assert_eq!(got, exp, "flow {f} at {x} hop {hops} to {b}");
                        // Answered by the lookup in the flow's entry, not
                        // by the search behind it.
                        assert_eq!(
                            r.hop_on_path(f, b, x, hops),
                            exp,
                            "flow {f} at {x} hop {hops}"
                        );
                        let Some(li) = exp else { break };
                        x = net.links[li as usize].to;
                        hops += 1;
                    }
                    assert_eq!(r.next_hop(net, up, f, b, b, hops), None);
                    // Everywhere, with hop hints right or wrong.
                    for node in 0..net.nodes.len() as u32 {
                        let exp = table_hop(net, &table, node, b);
                        for h in [0, 1, 2, 7, 1000] {
                            assert_eq!(
                                r.next_hop(net, up, f, b, node, h),
                                exp,
                                "flow {f} node {node} to {b} hint {h} budget {budget:?}"
                            );
                        }
                    }
                }
                assert_eq!(
                    r.base_rtt(net, f),
                    net.base_rtt(&table, s, d),
                    "flow {f} base rtt"
                );
            }
        }
    }

    /// A directed link; the other fields from a built one.
    fn link(from: u32, to: u32, ms: u64) -> LinkDef {
        static TEMPLATE: std::sync::OnceLock<LinkDef> = std::sync::OnceLock::new();
        let t = TEMPLATE.get_or_init(|| {
            scenario(
                "duration = \"1s\"\n[topology]\nkind = \"graph\"\n\
                 nodes = [{name=\"a\"},{name=\"b\"}]\n\
                 links = [{from=\"a\", to=\"b\", rate=\"1Mbps\", delay=\"1ms\"}]\n\
                 [[flows]]\nprotocol = \"newreno\"\nsrc = \"a\"\ndst = \"b\"",
            )
            .links[0]
                .clone()
        });
        LinkDef {
            name: format!("{from}->{to}"),
            from,
            to,
            delay: Duration::from_millis(ms),
            ..t.clone()
        }
    }

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % n
        }
    }

    fn all_up(net: &NetDef) -> Vec<bool> {
        vec![true; net.links.len()]
    }

    /// Up-masks with the links named (either direction of a duplex) down.
    fn down(net: &NetDef, names: &[&str]) -> Vec<bool> {
        net.links
            .iter()
            .map(|l| {
                let base = l.name.strip_suffix(".rev").unwrap_or(&l.name);
                !names.contains(&base)
            })
            .collect()
    }

    fn scenario(text: &str) -> NetDef {
        NetDef::build(&Scenario::from_toml_str(text, "t.toml", &[]).unwrap())
    }

    #[test]
    fn random_graphs_match_the_table() {
        let mut rng = Lcg(7);
        for round in 0..400 {
            let n = 2 + rng.next(if round % 4 == 0 { 60 } else { 16 }) as u32;
            let m = rng.next(u64::from(n) * 4) as u32;
            let mut net = NetDef::default();
            for i in 0..n {
                net.nodes.push(format!("n{i}"));
            }
            // Some rounds have hubs: many links at a few nodes.
            let hubs = rng.next(3) as u32;
            for _ in 0..m {
                let mut a = rng.next(u64::from(n)) as u32;
                let mut b = rng.next(u64::from(n)) as u32;
                if hubs > 0 && rng.next(2) == 0 {
                    a = rng.next(u64::from(hubs.min(n))) as u32;
                }
                if hubs > 0 && rng.next(3) == 0 {
                    b = rng.next(u64::from(hubs.min(n))) as u32;
                }
                net.links.push(link(a, b, 1 + rng.next(50)));
                if rng.next(2) == 0 {
                    net.links.push(link(b, a, 1 + rng.next(50)));
                }
            }
            for _ in 0..1 + rng.next(8) {
                let s = rng.next(u64::from(n)) as u32;
                let d = rng.next(u64::from(n)) as u32;
                net.endpoints.push((s, d));
            }
            check(&net, &all_up(&net));
            let up: Vec<bool> = (0..net.links.len()).map(|_| rng.next(5) != 0).collect();
            check(&net, &up);
            // A short `up`: the links past its end count as up.
            check(&net, &up[..up.len() / 2]);
        }
    }

    #[test]
    fn grids_with_many_ties_match_the_table() {
        // A w×h grid of duplex links (every corner-to-corner path of the
        // same length ties) and some diagonals, flows between far nodes.
        for (w, h) in [(3u32, 3u32), (6, 5), (9, 9)] {
            let mut net = NetDef::default();
            let id = |x: u32, y: u32| y * w + x;
            for i in 0..w * h {
                net.nodes.push(format!("g{i}"));
            }
            for y in 0..h {
                for x in 0..w {
                    if x + 1 < w {
                        net.links.push(link(id(x, y), id(x + 1, y), 1));
                        net.links.push(link(id(x + 1, y), id(x, y), 1));
                    }
                    if y + 1 < h {
                        // Added in the reverse order, so link numbers do
                        // not follow node numbers.
                        net.links.push(link(id(x, y + 1), id(x, y), 2));
                        net.links.push(link(id(x, y), id(x, y + 1), 2));
                    }
                }
            }
            net.links.push(link(id(1, 1), id(w - 1, h - 1), 9));
            net.endpoints = vec![
                (id(0, 0), id(w - 1, h - 1)),
                (id(w - 1, 0), id(0, h - 1)),
                (id(0, h / 2), id(w - 1, h / 2)),
                (id(0, 0), id(w - 1, h - 1)),
                (id(w / 2, h / 2), id(w / 2, h / 2)),
            ];
            check(&net, &all_up(&net));
            let mut rng = Lcg(u64::from(w * h));
            for _ in 0..5 {
                let up: Vec<bool> = (0..net.links.len()).map(|_| rng.next(6) != 0).collect();
                check(&net, &up);
            }
        }
    }

    #[test]
    fn builtin_topologies_match_the_table() {
        let dumbbell = scenario(
            r#"
duration = "1s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "4Mbps", delay = "20ms" }
access = { rate = "100Mbps", delays = ["1ms", "5ms", "10ms"] }
[[flows]]
protocol = "newreno"
count = 5
"#,
        );
        check(&dumbbell, &all_up(&dumbbell));
        check(&dumbbell, &down(&dumbbell, &["bottleneck"]));
        check(&dumbbell, &down(&dumbbell, &["access.s1", "access.d3"]));
        let mut reverse_only = all_up(&dumbbell);
        reverse_only[0] = false; // the bottleneck's forward direction
        check(&dumbbell, &reverse_only);

        let satellite = scenario(
            r#"
duration = "1s"
[topology]
kind = "satellite"
uplink = { rate = "2Mbps", delay = "125ms" }
downlink = { rate = "2Mbps", delay = "125ms" }
access = { rate = "100Mbps", delay = "1ms" }
[[flows]]
protocol = "newreno"
count = 3
"#,
        );
        check(&satellite, &all_up(&satellite));
        check(&satellite, &down(&satellite, &["downlink"]));
    }

    #[test]
    fn graph_with_equal_length_paths_matches_the_table() {
        let net = scenario(
            r#"
duration = "1s"
[topology]
kind = "graph"
nodes = [{name="a"},{name="b"},{name="c"},{name="d"},{name="e"},{name="f"}]
links = [
  {from="a", to="c", rate="1Mbps", delay="1ms"},
  {from="a", to="b", rate="1Mbps", delay="2ms"},
  {from="b", to="d", rate="1Mbps", delay="3ms"},
  {from="c", to="d", rate="1Mbps", delay="4ms"},
  {from="c", to="e", rate="1Mbps", delay="5ms"},
  {from="d", to="f", rate="1Mbps", delay="6ms"},
  {from="e", to="f", rate="1Mbps", delay="7ms"},
  {from="b", to="e", rate="1Mbps", delay="8ms"},
  {from="a", to="f", rate="1Mbps", delay="90ms"},
]
[[flows]]
protocol = "newreno"
src = "a"
dst = "f"
[[flows]]
protocol = "newreno"
src = "b"
dst = "c"
count = 2
[[flows]]
protocol = "newreno"
src = "e"
dst = "a"
"#,
        );
        check(&net, &all_up(&net));
        check(&net, &down(&net, &["a->f"]));
        check(&net, &down(&net, &["a->f", "c->d"]));
        check(&net, &down(&net, &["a->f", "d->f", "e->f"]));
    }

    #[test]
    fn constellations_match_the_table_across_snapshots() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        for file in ["refwa-handover.toml", "refwa-f-two-bottlenecks.toml"] {
            let sc = Scenario::load(&dir.join(file), &[]).unwrap();
            let net = NetDef::build(&sc);
            let mut up = all_up(&net);
            check(&net, &up);
            let snaps = crate::topology::snapshot::resolve(&sc.snapshots, &net.links).unwrap();
            let mut routes = Routes::build(&net, &up);
            for s in snaps {
                for li in s.down {
                    up[li] = false;
                }
                for li in s.up {
                    up[li] = true;
                }
                check(&net, &up);
                routes.update(&net, &up);
                let fresh = Routes::build(&net, &up);
                assert_eq!(routes.hops, fresh.hops);
                assert_eq!(routes.flow_paths, fresh.flow_paths);
            }
        }
    }

    #[test]
    fn a_flow_without_a_route_answers_none_at_its_source() {
        let net = scenario(
            r#"
duration = "1s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "4Mbps", delay = "20ms" }
access = { rate = "100Mbps", delay = "1ms" }
[[flows]]
protocol = "newreno"
count = 2
"#,
        );
        let up = down(&net, &["bottleneck"]);
        let r = Routes::build(&net, &up);
        let (s, d) = net.endpoints[0];
        assert_eq!(r.path(0, false), None);
        assert_eq!(r.path(0, true), None);
        assert_eq!(r.base_rtt(&net, 0), None);
        assert_eq!(r.next_hop(&net, &up, 0, d, s, 0), None);
        assert_eq!(r.next_hop(&net, &up, 0, s, d, 0), None);
        // Off the path but routed: r1 still reaches s0.
        let r1 = 0;
        let li = r.next_hop(&net, &up, 0, s, r1, 3).unwrap();
        assert_eq!(net.links[li as usize].name, "access.s0.rev");
    }

    #[test]
    fn four_thousand_flow_dumbbell_fits_in_well_under_two_megabytes() {
        let net = scenario(
            r#"
duration = "1s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "4Mbps", delay = "20ms" }
access = { rate = "100Mbps", delays = ["1ms", "5ms", "10ms"] }
[[flows]]
protocol = "newreno"
count = 4000
"#,
        );
        let n = net.nodes.len();
        assert_eq!(n, 8002);
        let up = all_up(&net);
        let r = Routes::build(&net, &up);
        let table_bytes = n * n * 4;
        assert!(table_bytes > 256_000_000);
        assert!(r.heap_bytes() < 2_000_000, "{} bytes", r.heap_bytes());
        // Paths as the dumbbell has them: access, bottleneck, access.
        let name = |li: u32| net.links[li as usize].name.as_str();
        for f in [0u32, 1, 2017, 3999] {
            let fwd: Vec<&str> = r.path(f, false).unwrap().iter().map(|&l| name(l)).collect();
            let rev: Vec<&str> = r.path(f, true).unwrap().iter().map(|&l| name(l)).collect();
            assert_eq!(
                fwd,
                [
                    format!("access.s{f}"),
                    "bottleneck".into(),
                    format!("access.d{f}")
                ]
            );
            assert_eq!(
                rev,
                [
                    format!("access.d{f}.rev"),
                    "bottleneck.rev".into(),
                    format!("access.s{f}.rev")
                ]
            );
            let (s, d) = net.endpoints[f as usize];
            assert_eq!(
                r.next_hop(&net, &up, f, d, s, 0),
                Some(r.path(f, false).unwrap()[0])
            );
        }
        // The same answers by BFS columns.
        let c = Routes::build_with(&net, &up, 0);
        assert_eq!(c.hops, r.hops);
        assert_eq!(c.flow_paths, r.flow_paths);
    }
}
