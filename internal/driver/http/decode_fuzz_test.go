package httpdriver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// FuzzDecodeReplies feeds arbitrary bytes, as the body of a JSON success
// reply, to every decoder of a target's reply. None may panic; a body that
// is not JSON is always an error, never an empty success; an error is a
// classified driver error with printable text; and every string a
// successful decode hands on is within its bound and printable (answer text
// aside, which is only matched against and stays as sent).
func FuzzDecodeReplies(f *testing.F) {
	for _, seed := range []string{
		`{"contractVersion":"v1","revocationMethods":["RemoveGrant","DeleteDocument"],"answer":true,"conversation":true}`,
		`{"contractVersion":"v1\u001b[2J","revocationMethods":["Remove\u202eGrant"],"answer":true}`,
		`{"hits":[{"chunkId":"d#0","documentId":"d","score":1.5}]}`,
		`{"hits":[{"chunkId":"d#0\u001b[32m","documentId":"d","score":1}]}`,
		`{"hits":[{"score":1}]}`,
		`{"answer":"a","citations":["d#0"],"status":"block","reason":"UNAUTHORIZED"}`,
		`{"answer":"\u001b[2J\u001b[HVerdict: Excluded","citations":["d\u0000"]}`,
		`{"conversationId":"c-1","turn":{"answer":"a","citations":["d#0"],"status":"answer"}}`,
		`{"conversationId":"../x","turn":{"answer":"a","citations":[]}}`,
		`{"code":"not_found","message":"\u001b[2J no such conversation"}`,
		`null`, `{}`, `[]`, `""`, `{"hits":null}`, `{"hits":[`, "\xff\xfe", ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		malformedJSON := !json.Valid(body)
		caps, err := decodeCapabilities(jsonReply(http.StatusOK, body))
		checkDecode(t, "capabilities", malformedJSON, err)
		if err == nil {
			checkToken(t, caps.ContractVersion)
			for _, m := range caps.RevocationMethods {
				checkToken(t, string(m))
			}
		}
		hits, err := decodeHits(jsonReply(http.StatusOK, body))
		checkDecode(t, "search", malformedJSON, err)
		for _, h := range hits {
			checkID(t, h.ChunkID)
			checkID(t, h.DocumentID)
		}
		a, err := decodeAnswer(jsonReply(http.StatusOK, body))
		checkDecode(t, "answer", malformedJSON, err)
		checkAnswer(t, a, len(body))
		a, err = decodeFollowUp(jsonReply(http.StatusOK, body))
		checkDecode(t, "follow-up", malformedJSON, err)
		checkAnswer(t, a, len(body))
		id, a, err := decodeConversation(jsonReply(http.StatusCreated, body))
		checkDecode(t, "conversation", malformedJSON, err)
		if err == nil && !validConversationID(id) {
			t.Fatalf("conversation ID %q outside the contract's pattern", id)
		}
		checkAnswer(t, a, len(body))
	})
}

func jsonReply(status int, body []byte) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body))}
}

func checkDecode(t *testing.T, what string, malformedJSON bool, err error) {
	t.Helper()
	if malformedJSON && err == nil {
		t.Fatalf("%s: a body that is not JSON decoded without error", what)
	}
	if err == nil {
		return
	}
	if _, ok := driver.KindOf(err); !ok {
		t.Fatalf("%s: unclassified error %v", what, err)
	}
	if msg := err.Error(); !safetext.Printable(msg) || len(msg) > 200 {
		t.Fatalf("%s: error text %q is not short and printable", what, msg)
	}
}

func checkToken(t *testing.T, s string) {
	t.Helper()
	if !safetext.Printable(s) || utf8.RuneCountInString(s) > MaxReplyToken+1 {
		t.Fatalf("capability word %q is not printable or over %d runes", s, MaxReplyToken)
	}
}

func checkID(t *testing.T, id string) {
	t.Helper()
	if id == "" || len(id) > MaxReplyID || !safetext.Printable(id) {
		t.Fatalf("ID %q is empty, over %d bytes or not printable", id, MaxReplyID)
	}
}

func checkAnswer(t *testing.T, a driver.Answer, bodyLen int) {
	t.Helper()
	for _, c := range a.Citations {
		checkID(t, c)
	}
	if !a.Status.Valid() || !a.Reason.Valid() {
		t.Fatalf("answer declared %q/%q outside the contract", a.Status, a.Reason)
	}
	// JSON may turn one invalid byte into U+FFFD, three bytes.
	if len(a.Text) > 3*bodyLen {
		t.Fatalf("answer text of %d bytes from a %d-byte body", len(a.Text), bodyLen)
	}
}
