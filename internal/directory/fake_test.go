package directory

import (
	"net"
	"sync"
	"testing"

	ber "github.com/go-asn1-ber/asn1-ber"
	"github.com/go-ldap/ldap/v3"
)

// fakeServer is a raw TCP listener on 127.0.0.1 that reads LDAP requests
// and lets a test script the replies byte by byte: enough BER to be a
// directory, or a hostile one.
type fakeServer struct {
	ln     net.Listener
	handle func(c net.Conn, r request)

	mu       sync.Mutex
	requests []request
	conns    []net.Conn
	wg       sync.WaitGroup
}

// request is one decoded LDAP request.
type request struct {
	id  int64
	tag ber.Tag
	op  *ber.Packet
}

func startFake(t *testing.T, handle func(c net.Conn, r request)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{ln: ln, handle: handle}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.stop)
	return f
}

func (f *fakeServer) url() string { return "ldap://" + f.ln.Addr().String() }

func (f *fakeServer) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *fakeServer) serve(c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
	for {
		p, err := ber.ReadPacket(c)
		if err != nil || len(p.Children) < 2 {
			return
		}
		id, _ := p.Children[0].Value.(int64)
		r := request{id: id, tag: p.Children[1].Tag, op: p.Children[1]}
		f.mu.Lock()
		f.requests = append(f.requests, r)
		f.mu.Unlock()
		if r.tag == ldap.ApplicationUnbindRequest || r.tag == ldap.ApplicationAbandonRequest {
			continue
		}
		f.handle(c, r)
	}
}

func (f *fakeServer) stop() {
	_ = f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// received is every request of the given operation, in order.
func (f *fakeServer) received(tag ber.Tag) []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []request
	for _, r := range f.requests {
		if r.tag == tag {
			out = append(out, r)
		}
	}
	return out
}

// message frames a protocol op as an LDAPMessage.
func message(id int64, op *ber.Packet) []byte {
	p := ber.Encode(ber.ClassUniversal, ber.TypeConstructed, ber.TagSequence, nil, "")
	p.AppendChild(ber.NewInteger(ber.ClassUniversal, ber.TypePrimitive, ber.TagInteger, id, ""))
	p.AppendChild(op)
	return p.Bytes()
}

// result is an LDAPResult of the given response tag; referrals, when
// given, go in its referral field.
func result(tag ber.Tag, code uint16, matchedDN, diagnostic string, referrals ...string) *ber.Packet {
	op := ber.Encode(ber.ClassApplication, ber.TypeConstructed, tag, nil, "")
	op.AppendChild(ber.NewInteger(ber.ClassUniversal, ber.TypePrimitive, ber.TagEnumerated, int64(code), ""))
	op.AppendChild(octets(matchedDN))
	op.AppendChild(octets(diagnostic))
	if len(referrals) > 0 {
		ref := ber.Encode(ber.ClassContext, ber.TypeConstructed, 3, nil, "")
		for _, u := range referrals {
			ref.AppendChild(octets(u))
		}
		op.AppendChild(ref)
	}
	return op
}

// entry is a SearchResultEntry with one attribute.
func entry(dn, attr string, values ...string) *ber.Packet {
	op := ber.Encode(ber.ClassApplication, ber.TypeConstructed, ldap.ApplicationSearchResultEntry, nil, "")
	op.AppendChild(octets(dn))
	attrs := ber.Encode(ber.ClassUniversal, ber.TypeConstructed, ber.TagSequence, nil, "")
	a := ber.Encode(ber.ClassUniversal, ber.TypeConstructed, ber.TagSequence, nil, "")
	a.AppendChild(octets(attr))
	set := ber.Encode(ber.ClassUniversal, ber.TypeConstructed, ber.TagSet, nil, "")
	for _, v := range values {
		set.AppendChild(octets(v))
	}
	a.AppendChild(set)
	attrs.AppendChild(a)
	op.AppendChild(attrs)
	return op
}

func reference(uri string) *ber.Packet {
	op := ber.Encode(ber.ClassApplication, ber.TypeConstructed, ldap.ApplicationSearchResultReference, nil, "")
	op.AppendChild(octets(uri))
	return op
}

func octets(s string) *ber.Packet {
	return ber.NewString(ber.ClassUniversal, ber.TypePrimitive, ber.TagOctetString, s, "")
}

// tlv is one BER element built by hand, for replies too large or too odd
// to build as packets.
func tlv(tag byte, content []byte) []byte {
	n := len(content)
	var length []byte
	switch {
	case n < 0x80:
		length = []byte{byte(n)}
	case n < 1<<16:
		length = []byte{0x82, byte(n >> 8), byte(n)}
	default:
		length = []byte{0x84, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	return append(append([]byte{tag}, length...), content...)
}

// responseTag is the response tag for a request's.
var responseTag = map[ber.Tag]ber.Tag{
	ldap.ApplicationBindRequest:    ldap.ApplicationBindResponse,
	ldap.ApplicationModifyRequest:  ldap.ApplicationModifyResponse,
	ldap.ApplicationCompareRequest: ldap.ApplicationCompareResponse,
	ldap.ApplicationSearchRequest:  ldap.ApplicationSearchResultDone,
}

// reply writes one result for r, of r's response tag.
func reply(c net.Conn, r request, code uint16, diagnostic string, referrals ...string) {
	_, _ = c.Write(message(r.id, result(responseTag[r.tag], code, "", diagnostic, referrals...)))
}

// bindThen answers binds with success and every other request with then.
func bindThen(then func(c net.Conn, r request)) func(c net.Conn, r request) {
	return func(c net.Conn, r request) {
		if r.tag == ldap.ApplicationBindRequest {
			reply(c, r, ldap.LDAPResultSuccess, "")
			return
		}
		then(c, r)
	}
}

// searchFilter is a search request's filter as text.
func searchFilter(t *testing.T, r request) string {
	t.Helper()
	f, err := ldap.DecompileFilter(r.op.Children[6])
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// requestString is the i-th child of a request's op as a string.
func requestString(r request, i int) string {
	if i >= len(r.op.Children) {
		return ""
	}
	return string(r.op.Children[i].Data.Bytes())
}

// requestInt is the i-th child of a request's op as an integer.
func requestInt(r request, i int) int64 {
	v, _ := r.op.Children[i].Value.(int64)
	return v
}
