package directory

import (
	"bytes"
	"errors"
	"testing"

	ber "github.com/go-asn1-ber/asn1-ber"
	"github.com/go-ldap/ldap/v3"
)

// countElements is how many BER elements go-ber decodes from stream.
func countElements(t *testing.T, stream []byte) int64 {
	t.Helper()
	var walk func(p *ber.Packet) int64
	walk = func(p *ber.Packet) int64 {
		n := int64(1)
		for _, c := range p.Children {
			n += walk(c)
		}
		return n
	}
	var n int64
	r := bytes.NewReader(stream)
	for r.Len() > 0 {
		p, err := ber.ReadPacket(r)
		if err != nil {
			t.Fatal(err)
		}
		n += walk(p)
	}
	return n
}

// replyStream is what a directory sends for a Members call: an entry with
// values, a long one among them (a multi-byte length), then a result.
func replyStream() []byte {
	values := []string{"uid=a,dc=org", "uid=b,dc=org", string(bytes.Repeat([]byte("x"), 70000))}
	var s []byte
	s = append(s, message(2, entry("cn=staff,dc=org", "member", values...))...)
	s = append(s, message(2, result(ldap.ApplicationSearchResultDone, 0, "", ""))...)
	return s
}

// The scanner counts exactly the elements go-ber decodes, however the
// stream is split into reads.
func TestScannerFollowsBER(t *testing.T) {
	stream := replyStream()
	want := countElements(t, stream)
	for _, chunk := range []int{1, 7, 4096, len(stream)} {
		s := berScanner{limits: replyLimits{bytes: 1 << 20, elements: 1 << 20, messageElements: 1 << 20}}
		for i := 0; i < len(stream); i += chunk {
			if err := s.feed(stream[i:min(i+chunk, len(stream))]); err != nil {
				t.Fatalf("chunk %d: %v", chunk, err)
			}
		}
		if s.elements != want || s.msgLeft != 0 || s.skip != 0 || s.hdr.step != stepTag {
			t.Fatalf("chunk %d: %d elements (want %d), left %d, skip %d, step %d", chunk, s.elements, want, s.msgLeft, s.skip, s.hdr.step)
		}
	}
}

func TestScannerLimits(t *testing.T) {
	stream := replyStream()
	elements := countElements(t, stream)
	for _, tc := range []struct {
		name   string
		limits replyLimits
		stream []byte
		want   error
	}{
		{"at the limits", replyLimits{int64(len(stream)), elements, elements}, stream, nil},
		{"one byte over", replyLimits{int64(len(stream)) - 1, elements, elements}, stream, errReplyTooLarge},
		{"one element over", replyLimits{1 << 20, elements - 1, elements}, stream, errTooManyParts},
		{"one element over in a message", replyLimits{1 << 20, elements, 9}, stream, errTooManyParts},
		{"declared beyond the budget", replyLimits{100, 100, 100}, []byte{0x30, 0x81, 0x80}, errReplyTooLarge},
		{"indefinite length", replyLimits{100, 100, 100}, []byte{0x30, 0x80}, errMalformedBER},
		{"primitive message", replyLimits{100, 100, 100}, []byte{0x04, 0x01, 0x00}, errMalformedBER},
		{"child longer than its message", replyLimits{100, 100, 100}, []byte{0x30, 0x03, 0x04, 0x05}, errMalformedBER},
		{"header past its message", replyLimits{100, 100, 100}, []byte{0x30, 0x01, 0x04, 0x00}, errMalformedBER},
		{"five length bytes", replyLimits{100, 100, 100}, []byte{0x30, 0x85}, errMalformedBER},
		{"endless tag", replyLimits{100, 100, 100}, []byte{0x30, 0x10, 0x1f, 0x81, 0x81, 0x81, 0x81, 0x81}, errMalformedBER},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := berScanner{limits: tc.limits}
			if err := s.feed(tc.stream); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// The default bounds leave an honest Members call of MaxValues members
// (the group entry, then mapping entries of long DNs) inside them.
func TestDefaultLimitsFitAnHonestGroup(t *testing.T) {
	limits := limitsFor(DefaultMaxValues)
	dn := func(i int) string {
		return "CN=Member Number " + string(rune('A'+i%26)) + "x,OU=Users,OU=Corp,DC=corp,DC=example,DC=com"
	}
	dns := make([]string, DefaultMaxValues)
	for i := range dns {
		dns[i] = dn(i)
	}
	stream := message(2, entry("CN=staff,OU=Groups,DC=corp,DC=example,DC=com", "member", dns...))
	for i := range dns {
		stream = append(stream, message(3+int64(i/256), entry(dns[i], "sAMAccountName", "member"+dns[i][17:18]))...)
	}
	s := berScanner{limits: limits}
	if err := s.feed(stream); err != nil {
		t.Fatalf("%d bytes, %d elements: %v (limits %+v)", len(stream), s.elements, err, limits)
	}
	t.Logf("an honest group of %d: %d bytes, %d elements; limits %+v", DefaultMaxValues, len(stream), s.elements, limits)
}
