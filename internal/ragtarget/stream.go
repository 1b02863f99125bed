package ragtarget

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The declared ends of a stream cut short: the error type and code of the
// last data event before [DONE], so a client tells a cut from a failure
// and from a stream that ran to its end.
const (
	// streamAccessRevoked: a re-check found access to a document the answer
	// draws on gone.
	streamAccessRevoked = "access_revoked"
	// streamAuthzUnavailable: a re-check could not be decided. Never taken
	// for "still allowed" nor for "revoked".
	streamAuthzUnavailable = "authorization_unavailable"
)

var streamEndMessages = map[string]string{
	streamAccessRevoked:    "access to a document this answer draws on was revoked while it streamed; the rest is withheld",
	streamAuthzUnavailable: "access could not be re-checked while the answer streamed; the rest is withheld",
}

// chatStream writes one streamed completion, paced by the chunk interval
// and re-authorised as the policy says.
type chatStream struct {
	s         *Service
	ctx       context.Context
	w         io.Writer
	rc        *http.ResponseController
	principal string
	// docs are the documents the answer draws on, the ones re-checked.
	docs []string
	// decided is when access to docs was last decided: the retrieval (or
	// the cache fill it stands for) at first, then each re-check.
	decided time.Time
	sent    int
}

// streamCompletion sends reply as server-sent events the way OpenAI does,
// flushing each, then [DONE]. A client that went away ends the stream at the
// next pause or write.
func (s *Service) streamCompletion(w http.ResponseWriter, r *http.Request, principal string, reply chatCompletion, ans answer) {
	// net/http watches the connection only once the body was read to its
	// end; the decoder may have stopped short of it (trailing bytes). Then a
	// client that leaves cancels the context a pause waits on.
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	st := &chatStream{s: s, ctx: r.Context(), w: w, rc: http.NewResponseController(w), principal: principal,
		docs: citedDocuments(ans), decided: s.cfg.Clock.Now()}
	st.run(streamChunks(reply))
}

func (st *chatStream) run(chunks []chatChunk) {
	for i, c := range chunks {
		if i > 0 && !st.pause() {
			return
		}
		if carriesContent(c) {
			if end := st.reauthorize(); end != "" {
				st.cut(end)
				return
			}
		}
		b, err := json.Marshal(c)
		if err != nil || !st.send(b) {
			return
		}
	}
	st.send([]byte("[DONE]"))
}

// pause waits one chunk interval on a timer of its own, and reports false
// as soon as the client is gone instead of waiting the interval out.
func (st *chatStream) pause() bool {
	every := st.s.cfg.StreamChunkInterval
	if every <= 0 {
		return st.ctx.Err() == nil
	}
	t := st.s.cfg.Clock.NewTimer(every)
	defer t.Stop()
	select {
	case <-st.ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// reauthorize re-decides access when the policy says a check is due, and
// returns the declared end when the stream must stop; "" to go on. An
// answer that cites nothing draws on nothing to re-check.
func (st *chatStream) reauthorize() string {
	if len(st.docs) == 0 || !st.due() {
		return ""
	}
	st.decided = st.s.cfg.Clock.Now()
	ok, err := st.s.readsAll(st.ctx, st.principal, st.docs)
	switch {
	case err != nil:
		if st.ctx.Err() == nil {
			st.s.cfg.Logger.Error("chat stream re-authorisation failed", "error", err)
		}
		return streamAuthzUnavailable
	case !ok:
		return streamAccessRevoked
	}
	return ""
}

func (st *chatStream) due() bool {
	switch p := st.s.cfg.StreamReauthorize; p.Mode {
	case ReauthorizePerChunk:
		return true
	case ReauthorizeInterval:
		return st.s.cfg.Clock.Since(st.decided) >= p.Every
	}
	return false
}

// cut ends the stream with its declared status: an OpenAI-style error
// object in a data event of its own, then [DONE].
func (st *chatStream) cut(end string) {
	st.s.cfg.Logger.Debug("chat stream cut", "reason", end, "chunks_sent", st.sent)
	var body openAIError
	body.Error.Message, body.Error.Type, body.Error.Code = streamEndMessages[end], end, &end
	b, err := json.Marshal(body)
	if err == nil && st.send(b) {
		st.send([]byte("[DONE]"))
	}
}

func (st *chatStream) send(data []byte) bool {
	if _, err := fmt.Fprintf(st.w, "data: %s\n\n", data); err != nil {
		return false
	}
	st.sent++
	return st.rc.Flush() == nil
}

func carriesContent(c chatChunk) bool {
	d := c.Choices[0].Delta
	return d.Content != nil && *d.Content != ""
}

// citedDocuments are the distinct documents of an answer's citations.
func citedDocuments(ans answer) []string {
	seen := map[string]struct{}{}
	var docs []string
	for _, c := range ans.citations {
		id := docIDOf(c)
		if _, ok := seen[id]; !ok {
			seen[id] = struct{}{}
			docs = append(docs, id)
		}
	}
	return docs
}

// readsAll is the search path's decision for docs at this moment: the
// query-time engine's when one is configured, else the synced access lists
// on the replica the next search would read (a document gone from it is
// not readable; filter mode none reads every document it has).
func (s *Service) readsAll(ctx context.Context, principal string, docs []string) (bool, error) {
	switch {
	case s.check != nil:
		permitted, err := s.check.Allowed(ctx, principal, docs)
		return err == nil && containsAll(permitted, docs), err
	case s.authz != nil:
		readable, err := s.authz.Readable(ctx, principal)
		return err == nil && containsAll(readable, docs), err
	}
	r, principals := s.pick(), s.principalsFor(principal)
	for _, id := range docs {
		d, ok := r.doc(id)
		if !ok || (s.cfg.FilterMode != FilterNone && !allowed(d.acl, principals)) {
			return false, nil
		}
	}
	return true, nil
}

func containsAll(set map[string]struct{}, ids []string) bool {
	for _, id := range ids {
		if _, ok := set[id]; !ok {
			return false
		}
	}
	return true
}
