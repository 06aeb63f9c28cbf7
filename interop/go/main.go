// sarpeer: a small Saratoga peer for satcc's live interop check
// (scripts/saratoga-interop.sh, issue 29 item 3). Our own code: every frame
// it sends is built, and every frame it receives is read, by the encoders
// and decoders of the Go implementation by one of the draft's authors
// (github.com/charlesetsmith/saratoga: sarflags, request, metadata, dirent,
// data, status, holes, timestamp), whose source is NOT part of this
// repository: the script builds against a local checkout named by
// SARATOGA_GO_SRC. That implementation's own program cannot transfer (its
// transfer routine is a stub), so the transfer logic here is ours, kept
// minimal: METADATA, then DATA of 1024 bytes (a STATUS requested every 64
// frames and on the last), holes re-sent from each STATUS, a probe of the
// last frame when a STATUS is late; the receiver answers every request
// with its progress and holes and verifies the SHA-1 before renaming.
//
//	sarpeer -config saratoga.json put FILE NAME HOST:PORT
//	sarpeer -config saratoga.json get NAME DEST HOST:PORT
//	sarpeer -config saratoga.json serve DIR HOST:PORT N   (N transfers, then exit)
//
// Exit status 0 on success, 1 on a failed transfer, 2 on bad usage.
package main

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/charlesetsmith/saratoga/data"
	"github.com/charlesetsmith/saratoga/holes"
	"github.com/charlesetsmith/saratoga/metadata"
	"github.com/charlesetsmith/saratoga/request"
	"github.com/charlesetsmith/saratoga/sarflags"
	"github.com/charlesetsmith/saratoga/status"
)

const (
	payload    = 1024
	statusEach = 64
	// Every wait is bounded: a transfer that hears nothing for this long fails.
	idle = 10 * time.Second
)

// echo: put a timestamp in each STATUS answering a timestamped DATA, with
// the Go status encoder (which writes the offsets where the timestamp
// belongs: docs/saratoga.md, disagreement 3). Off by default.
var echo = flag.Bool("echo-timestamp", false, "echo DATA timestamps in STATUS (shows the Go encoder's fault)")
var config = flag.String("config", "", "the Go implementation's saratoga.json (its flag table)")

func main() {
	flag.Parse()
	a := flag.Args()
	if *config == "" || len(a) < 1 {
		usage()
	}
	var c sarflags.Cliflags
	if err := c.ReadConfig(*config); err != nil {
		fmt.Fprintln(os.Stderr, "sarpeer: --config:", err)
		os.Exit(2)
	}
	// Its file code reads the configuration through this global (nil
	// until set: the checksum of METADATA dereferences it).
	sarflags.Cliflag = &c
	var err error
	switch {
	case a[0] == "put" && len(a) == 4:
		err = clientPut(a[1], a[2], a[3])
	case a[0] == "get" && len(a) == 4:
		err = clientGet(a[1], a[2], a[3])
	case a[0] == "serve" && len(a) == 4:
		var n int
		if _, e := fmt.Sscan(a[3], &n); e != nil || n < 1 {
			usage()
		}
		err = serve(a[1], a[2], n)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sarpeer:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: sarpeer -config saratoga.json put FILE NAME HOST:PORT | get NAME DEST HOST:PORT | serve DIR HOST:PORT N")
	os.Exit(2)
}

// A frame from the peer: its type (from the flag table) and bytes.
type frame struct {
	kind string
	buf  []byte
	from *net.UDPAddr
}

func recv(conn *net.UDPConn, wait time.Duration) (*frame, error) {
	buf := make([]byte, 70000)
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	n, from, err := conn.ReadFromUDP(buf)
	if err != nil {
		return nil, err
	}
	if n < 4 {
		return &frame{kind: "short", from: from}, nil
	}
	h := uint32(buf[0])<<24 | uint32(buf[1])<<16 | uint32(buf[2])<<8 | uint32(buf[3])
	return &frame{kind: sarflags.GetStr(h, "frametype"), buf: buf[:n], from: from}, nil
}

func timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func send(conn *net.UDPConn, to *net.UDPAddr, b []byte, err error) error {
	if err != nil {
		return err
	}
	_, err = conn.WriteToUDP(b, to)
	return err
}

func dataFrame(session uint32, body []byte, off int, reqstatus bool) ([]byte, error) {
	end := off + payload
	if end > len(body) {
		end = len(body)
	}
	flags := "descriptor=d32,reqtstamp=no,reqstatus=no,eod=no"
	if reqstatus {
		flags = "descriptor=d32,reqtstamp=no,reqstatus=yes,eod=no"
	}
	if end == len(body) {
		flags = "descriptor=d32,reqtstamp=no,reqstatus=yes,eod=yes"
	}
	var d data.Data
	if err := d.New(flags, &data.Dinfo{Session: session, Offset: uint64(off), Payload: body[off:end]}); err != nil {
		return nil, err
	}
	return d.Encode()
}

// sendFile sends `path` as `name` in `session` to `to` (a PUT's sender or
// a GET's responder) and returns once a STATUS says every byte is there.
func sendFile(conn *net.UDPConn, to *net.UDPAddr, session uint32, path, name string) error {
	body, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	// Its METADATA code stats the name given relative to the working
	// directory but reads the checksum relative to Sardir: run it from
	// the file's directory with Sardir ".".
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.Chdir(filepath.Dir(abs)); err != nil {
		return err
	}
	sarflags.Cliflag.Sardir = "."
	var m metadata.MetaData
	err = m.New("descriptor=d32,transfer=file,progress=inprogress,reliability=udponly,csumtype=sha1",
		&metadata.Minfo{Session: session, Fname: filepath.Base(abs)})
	if e := os.Chdir(wd); e != nil {
		return e
	}
	if err != nil {
		return err
	}
	m.Dir.Path = name
	meta, err := m.Encode()
	if err := send(conn, to, meta, err); err != nil {
		return err
	}
	// Everything once, paced (about 40 Mb/s) so a loopback socket keeps up.
	last := -1
	for off := 0; off < len(body); off += payload {
		req := (off/payload)%statusEach == statusEach-1
		b, err := dataFrame(session, body, off, req)
		if err := send(conn, to, b, err); err != nil {
			return err
		}
		last = off
		time.Sleep(200 * time.Microsecond)
	}
	heard := time.Now()
	for {
		f, err := recv(conn, 500*time.Millisecond)
		if err != nil && !timeout(err) {
			return err
		}
		if f == nil {
			if time.Since(heard) > idle {
				return errors.New("no STATUS from the peer")
			}
			// A late STATUS: probe with the last frame (or METADATA).
			if last < 0 {
				err = send(conn, to, meta, nil)
			} else {
				b, e := dataFrame(session, body, last, true)
				err = send(conn, to, b, e)
			}
			if err != nil {
				return err
			}
			continue
		}
		if f.kind != "status" {
			continue
		}
		var s status.Status
		if err := s.Decode(f.buf); err != nil {
			return fmt.Errorf("STATUS decode: %v", err)
		}
		if s.Session != session {
			continue
		}
		heard = time.Now()
		if code := sarflags.GetStr(s.Header, "errcode"); code != "success" {
			return errors.New("peer error: " + code)
		}
		if sarflags.GetStr(s.Header, "metadatarecvd") == "no" {
			if err := send(conn, to, meta, nil); err != nil {
				return err
			}
		}
		if s.Progress >= uint64(len(body)) && len(s.Holes) == 0 {
			return nil
		}
		for _, h := range s.Holes {
			for off := h.Start; off < h.End && off < len(body); off += payload {
				req := off+payload >= h.End
				b, err := dataFrame(session, body, off, req)
				if err := send(conn, to, b, err); err != nil {
					return err
				}
				time.Sleep(200 * time.Microsecond)
			}
		}
	}
}

// receiver: what a PUT's destination or a GET's requester knows.
type receiver struct {
	session uint32
	size    int
	sum     []byte
	name    string
	meta    bool
	body    []byte
	got     holes.Holes // received [start, end), merged
	desc    string
}

func (r *receiver) add(start, end int) {
	r.got = append(r.got, holes.Hole{Start: start, End: end})
	sort.Slice(r.got, func(i, j int) bool { return r.got[i].Start < r.got[j].Start })
	merged := holes.Holes{}
	for _, h := range r.got {
		if n := len(merged); n > 0 && h.Start <= merged[n-1].End {
			if h.End > merged[n-1].End {
				merged[n-1].End = h.End
			}
			continue
		}
		merged = append(merged, h)
	}
	r.got = merged
}

func (r *receiver) progress() int {
	if len(r.got) > 0 && r.got[0].Start == 0 {
		return r.got[0].End
	}
	return 0
}

func (r *receiver) complete() bool {
	return r.meta && r.progress() >= r.size
}

func (r *receiver) status(inrespto uint64, voluntary bool, tstamp string) ([]byte, error) {
	var hs holes.Holes
	at := r.progress()
	for _, h := range r.got {
		if h.Start > at {
			hs = append(hs, holes.Hole{Start: at, End: h.Start})
		}
		if h.End > at {
			at = h.End
		}
	}
	md := "yes"
	if !r.meta {
		md = "no"
	}
	rh := "requested"
	if voluntary {
		rh = "voluntarily"
	}
	desc := r.desc
	if desc == "" {
		desc = "d32"
	}
	flags := "descriptor=" + desc + ",metadatarecvd=" + md + ",allholes=yes,reqholes=" + rh + ",errcode=success"
	if tstamp != "" {
		flags += "," + tstamp
	}
	var s status.Status
	if err := s.New(flags, &status.Sinfo{Session: r.session, Progress: uint64(r.progress()), Inrespto: inrespto, Holes: hs}); err != nil {
		return nil, err
	}
	return s.Encode()
}

// receive runs a receiver until the file is complete and verified, then
// writes it to dest (through a temporary) and lingers until 0.5 s pass
// without a frame, answering. A frame of another session heard while
// lingering is returned, for the caller to start with.
func receive(conn *net.UDPConn, to *net.UDPAddr, r *receiver, first *frame, dest func(string) string, resend func() error) (*frame, error) {
	heard := time.Now()
	f := first
	var done bool
	for {
		if f == nil {
			var err error
			f, err = recv(conn, 500*time.Millisecond)
			if err != nil && !timeout(err) {
				return nil, err
			}
		}
		if f == nil {
			if done {
				return nil, nil
			}
			if time.Since(heard) > idle {
				return nil, errors.New("nothing heard from the peer")
			}
			if resend != nil && !r.meta {
				if err := resend(); err != nil {
					return nil, err
				}
			}
			continue
		}
		cur := f
		f = nil
		switch cur.kind {
		case "metadata":
			var m metadata.MetaData
			if err := m.Decode(cur.buf); err != nil {
				return nil, fmt.Errorf("METADATA decode: %v", err)
			}
			if m.Session != r.session {
				if done {
					return cur, nil
				}
				continue
			}
			heard = time.Now()
			if !r.meta {
				r.meta = true
				r.size = int(m.Dir.Size)
				r.sum = m.Checksum
				r.name = m.Dir.Path
				r.desc = sarflags.GetStr(m.Header, "descriptor")
				nb := make([]byte, r.size)
				copy(nb, r.body)
				r.body = nb
			}
		case "data":
			var d data.Data
			if err := d.Decode(cur.buf); err != nil {
				return nil, fmt.Errorf("DATA decode: %v", err)
			}
			if d.Session != r.session {
				if done {
					return cur, nil
				}
				continue
			}
			heard = time.Now()
			end := int(d.Offset) + len(d.Payload)
			if r.meta && end > r.size {
				continue
			}
			if end > len(r.body) {
				nb := make([]byte, end)
				copy(nb, r.body)
				r.body = nb
			}
			copy(r.body[d.Offset:], d.Payload)
			r.add(int(d.Offset), end)
			if sarflags.GetStr(d.Header, "reqstatus") == "yes" {
				ts := ""
				if *echo && sarflags.GetStr(d.Header, "reqtstamp") == "yes" {
					ts = "reqtstamp=yes"
				}
				b, err := r.status(d.Offset, false, ts)
				if err := send(conn, to, b, err); err != nil {
					return nil, err
				}
			}
		default:
			continue
		}
		if r.complete() && !done {
			h := sha1.Sum(r.body[:r.size])
			if len(r.sum) > 0 && !bytes.Equal(h[:], r.sum[:len(h)]) {
				return nil, errors.New("SHA-1 mismatch")
			}
			path := dest(r.name)
			tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".sarpeer")
			if err := os.WriteFile(tmp, r.body[:r.size], 0o644); err != nil {
				return nil, err
			}
			if err := os.Rename(tmp, path); err != nil {
				return nil, err
			}
			done = true
			b, err := r.status(uint64(r.size), true, "")
			if err := send(conn, to, b, err); err != nil {
				return nil, err
			}
		}
	}
}

func clientPut(path, name, server string) error {
	to, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		return err
	}
	conn, err := net.ListenUDP("udp", nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	return sendFile(conn, to, rand.Uint32()|1, path, name)
}

func clientGet(name, dest, server string) error {
	to, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		return err
	}
	conn, err := net.ListenUDP("udp", nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	session := rand.Uint32() | 1
	var q request.Request
	if err := q.New("descriptor=d32,reqtype=get,txwilling=yes,rxwilling=yes", &request.Rinfo{Session: session, Fname: name}); err != nil {
		return err
	}
	req, err := q.Encode()
	if err := send(conn, to, req, err); err != nil {
		return err
	}
	r := &receiver{session: session}
	_, err = receive(conn, to, r, nil, func(string) string { return dest }, func() error {
		return send(conn, to, req, nil)
	})
	return err
}

// serve answers `n` transfers, one at a time: a REQUEST(get) is served
// from dir, a METADATA starts a PUT into dir.
func serve(dir, bind string, n int) error {
	addr, err := net.ResolveUDPAddr("udp", bind)
	if err != nil {
		return err
	}
	conn, err := net.ListenUDP("udp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Println("listening", conn.LocalAddr())
	var next *frame
	for done := 0; done < n; {
		f := next
		next = nil
		if f == nil {
			if f, err = recv(conn, 60*time.Second); err != nil {
				return err
			}
		}
		switch f.kind {
		case "request":
			var q request.Request
			if err := q.Decode(f.buf); err != nil {
				return fmt.Errorf("REQUEST decode: %v", err)
			}
			if sarflags.GetStr(q.Header, "reqtype") != "get" {
				continue
			}
			err = sendFile(conn, f.from, q.Session, filepath.Join(dir, filepath.Base(q.Fname)), q.Fname)
		case "metadata":
			var m metadata.MetaData
			if err := m.Decode(f.buf); err != nil {
				return fmt.Errorf("METADATA decode: %v", err)
			}
			r := &receiver{session: m.Session}
			next, err = receive(conn, f.from, r, f, func(name string) string {
				return filepath.Join(dir, filepath.Base(name))
			}, nil)
		case "data":
			// A PUT whose METADATA we missed: the STATUS says so and the
			// sender repeats it.
			var d data.Data
			if err := d.Decode(f.buf); err != nil {
				return fmt.Errorf("DATA decode: %v", err)
			}
			r := &receiver{session: d.Session}
			next, err = receive(conn, f.from, r, f, func(name string) string {
				return filepath.Join(dir, filepath.Base(name))
			}, nil)
		default:
			continue
		}
		if err != nil {
			return err
		}
		done++
	}
	return nil
}
