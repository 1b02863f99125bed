package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
)

// The ragtarget child records every search while recording is on: when it
// started and ended, the User-Agent (which names the replica, see
// target.UserAgent) and the query (the canary's handle). The parent reads
// the records after the window and tells from them which replica probed
// which canary when.

const (
	searchPath      = "/v1/search"
	recordStartPath = "/bench/record/start"
	recordPath      = "/bench/record"
)

// probeRecord is one search the target served.
type probeRecord struct {
	start, end int64 // Unix nanoseconds
	agent      uint32
	query      uint32
}

// recorder keeps the records, with agents and queries interned: at 3,600
// probes a second a window holds hundreds of thousands of records.
type recorder struct {
	mu      sync.Mutex
	on      bool
	records []probeRecord
	agents  intern
	queries intern
}

type intern struct {
	ids   map[string]uint32
	names []string
}

func (in *intern) id(s string) uint32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	if in.ids == nil {
		in.ids = map[string]uint32{}
	}
	id := uint32(len(in.names))
	in.ids[s] = id
	in.names = append(in.names, s)
	return id
}

// maxSearchBody bounds what the recorder reads of a search request.
const maxSearchBody = 64 << 10

// wrap records the searches next serves while recording is on; every
// other request passes untouched.
func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		on := rec.on
		rec.mu.Unlock()
		if !on || r.Method != http.MethodPost || r.URL.Path != searchPath {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxSearchBody))
		if err != nil {
			http.Error(w, "reading the request", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var q struct {
			Query string `json:"query"`
		}
		// A body that does not parse is the target's to refuse; it is
		// recorded with an empty query, which names no canary.
		_ = json.Unmarshal(body, &q)
		start := time.Now()
		next.ServeHTTP(w, r)
		end := time.Now()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.records = append(rec.records, probeRecord{start: start.UnixNano(), end: end.UnixNano(),
			agent: rec.agents.id(r.UserAgent()), query: rec.queries.id(q.Query)})
	})
}

// routes start recording and hand the records out.
func (rec *recorder) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST "+recordStartPath, func(w http.ResponseWriter, _ *http.Request) {
		rec.mu.Lock()
		rec.on, rec.records = true, nil
		rec.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET "+recordPath, func(w http.ResponseWriter, _ *http.Request) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		bw := bufio.NewWriter(w)
		rec.write(bw)
		_ = bw.Flush()
	})
}

// write emits the records as text: "A id agent" and "Q id query" lines
// for the dictionaries, then "P start end agent query" per search.
func (rec *recorder) write(w io.Writer) {
	for id, a := range rec.agents.names {
		fmt.Fprintf(w, "A %d %s\n", id, a)
	}
	for id, q := range rec.queries.names {
		fmt.Fprintf(w, "Q %d %s\n", id, q)
	}
	for _, p := range rec.records {
		fmt.Fprintf(w, "P %d %d %d %d\n", p.start, p.end, p.agent, p.query)
	}
}

// search is one recorded search as the parent reads it.
type search struct {
	start, end time.Time
	agent      string
	query      string
}

// startRecording turns recording on at every target, forgetting what was
// recorded before.
func startRecording(ctx context.Context, targets benchkit.Targets) error {
	for _, t := range targets {
		resp, err := t.Do(ctx, http.MethodPost, recordStartPath, http.StatusNoContent)
		if err != nil {
			return err
		}
		resp.Body.Close()
	}
	return nil
}

// readRecords reads every target's records.
func readRecords(ctx context.Context, targets benchkit.Targets) ([]search, error) {
	var out []search
	for _, t := range targets {
		resp, err := t.Do(ctx, http.MethodGet, recordPath, http.StatusOK)
		if err != nil {
			return nil, err
		}
		got, err := parseRecords(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("records of %s: %w", t.URL, err)
		}
		out = append(out, got...)
	}
	return out, nil
}

// parseRecords reads what write wrote.
func parseRecords(r io.Reader) ([]search, error) {
	agents, queries := map[string]string{}, map[string]string{}
	var out []search
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		kind, rest, _ := strings.Cut(s.Text(), " ")
		switch kind {
		case "A", "Q":
			id, value, _ := strings.Cut(rest, " ")
			if kind == "A" {
				agents[id] = value
			} else {
				queries[id] = value
			}
		case "P":
			f := strings.Fields(rest)
			if len(f) != 4 {
				return nil, fmt.Errorf("malformed record %q", s.Text())
			}
			start, err1 := strconv.ParseInt(f[0], 10, 64)
			end, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("malformed record %q", s.Text())
			}
			out = append(out, search{start: time.Unix(0, start), end: time.Unix(0, end), agent: agents[f[2]], query: queries[f[3]]})
		default:
			return nil, fmt.Errorf("malformed line %q", s.Text())
		}
	}
	return out, s.Err()
}

// replicaOf reads the replica out of a User-Agent "ragcanary/<version>
// (<replica>)"; "" for any other agent.
func replicaOf(agent string) string {
	rest, ok := strings.CutPrefix(agent, "ragcanary/")
	if !ok {
		return ""
	}
	_, rest, ok = strings.Cut(rest, " (")
	if !ok || !strings.HasSuffix(rest, ")") {
		return ""
	}
	return strings.TrimSuffix(rest, ")")
}
