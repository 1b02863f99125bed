package directory

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

const hostilePassword = "hunter2-correct-horse"

// fakeConfig points at a fake: users by search, so operations search
// before they modify, with a short timeout.
func fakeConfig(f *fakeServer) Config {
	return Config{
		URL:                 f.url(),
		BindDN:              "cn=admin,dc=example,dc=org",
		BindPassword:        hostilePassword,
		GroupDN:             "cn={group},ou=groups,dc=example,dc=org",
		MemberAttribute:     "member",
		UserSearchBase:      "ou=people,dc=example,dc=org",
		UserSearchAttribute: "uid",
		Timeout:             500 * time.Millisecond,
	}
}

func newFake(t *testing.T, f *fakeServer, edit ...func(*Config)) *Directory {
	t.Helper()
	cfg := fakeConfig(f)
	for _, e := range edit {
		e(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// wantKind checks err's kind and that no error in its chain holds the
// password, whatever the server echoed.
func wantKind(t *testing.T, err error, kind Kind, reason string) {
	t.Helper()
	got, ok := KindOf(err)
	if !ok || got != kind {
		t.Fatalf("got %v (kind %v), want kind %v", err, got, kind)
	}
	if !strings.Contains(err.Error(), reason) {
		t.Fatalf("got %q, want reason %q", err, reason)
	}
	noPassword(t, err)
}

func noPassword(t *testing.T, err error) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), hostilePassword) {
			t.Fatalf("error %q holds the bind password", e)
		}
	}
}

// A server that reads the request and never answers costs Timeout, and
// says timeout each time (go-ldap's own timer races the context's).
func TestHostileNeverReplies(t *testing.T) {
	f := startFake(t, func(net.Conn, request) {})
	const timeout = 200 * time.Millisecond
	d := newFake(t, f, func(c *Config) { c.Timeout = timeout })
	for range 5 {
		began := time.Now()
		err := d.Check(context.Background())
		took := time.Since(began)
		wantKind(t, err, Transient, reasonTimeout)
		if took < timeout || took > timeout+3*time.Second {
			t.Fatalf("gave up after %s, want about the %s Timeout", took, timeout)
		}
		t.Logf("silent server: %v after %s", err, took)
	}
	noGoroutinesLeft(t)
}

// The caller's cancellation ends an operation waiting on a silent server.
func TestHostileCancelEndsTheWait(t *testing.T) {
	asked := make(chan struct{}, 1)
	f := startFake(t, bindThen(func(net.Conn, request) { asked <- struct{}{} }))
	d := newFake(t, f, func(c *Config) { c.Timeout = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-asked; cancel() }()
	began := time.Now()
	_, err := d.Members(ctx, "staff")
	wantKind(t, err, Transient, reasonCanceled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v does not unwrap to context.Canceled", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("cancel took %s to end the call", took)
	}
}

// A server answering something else than LDAP (here HTTP) is a broken
// connection, not a hang.
func TestHostileGarbageReply(t *testing.T) {
	f := startFake(t, func(c net.Conn, _ request) {
		_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
	})
	err := newFake(t, f).Check(context.Background())
	wantKind(t, err, Permanent, errMalformedBER.Error())
}

// A message declaring 2 GiB fails at its header: nothing of it is read or
// allocated, and the server may stream as long as it likes.
func TestHostileHugeDeclaredMessage(t *testing.T) {
	f := startFake(t, func(c net.Conn, r request) {
		_, _ = c.Write([]byte{0x30, 0x84, 0x7f, 0xff, 0xff, 0xff})
		streamZeros(c)
	})
	d := newFake(t, f)
	var err error
	alloc := testutil.Allocated(func() { err = d.Check(context.Background()) })
	wantKind(t, err, Permanent, errReplyTooLarge.Error())
	if alloc > 8<<20 {
		t.Fatalf("a declared 2 GiB reply cost %d bytes", alloc)
	}
}

// Entries of 64 KiB each, sent without end to the search that maps member
// DNs to subjects: the operation stops at the byte budget (4 MiB, or 512 B
// a value), not at the server's leisure.
func TestHostileRepliesBeyondTheByteBudget(t *testing.T) {
	value := strings.Repeat("v", 64<<10)
	f := startFake(t, bindThen(func(c net.Conn, r request) {
		if requestInt(r, 1) == int64(ldap.ScopeBaseObject) {
			_, _ = c.Write(message(r.id, entry("cn=staff,dc=org", "member", "uid=a,dc=org")))
			reply(c, r, ldap.LDAPResultSuccess, "")
			return
		}
		msg := message(r.id, entry("uid=a,dc=org", "uid", value))
		for {
			if _, err := c.Write(msg); err != nil {
				return
			}
		}
	}))
	// The bound under test is bytes: time enough to read them under load.
	d := newFake(t, f, func(c *Config) { c.MaxEntries, c.Timeout = 100000, 30*time.Second })
	var err error
	began := time.Now()
	alloc := testutil.Allocated(func() { _, err = d.Members(context.Background(), "staff") })
	wantKind(t, err, Permanent, errReplyTooLarge.Error())
	t.Logf("stopped after %s, %d bytes allocated (budget %d bytes)", time.Since(began), alloc, d.limits.bytes)
	// go-ldap copies a value into every enclosing packet as it decodes it:
	// about 16 bytes allocated per byte read here (30 under -race).
	if alloc > 64*uint64(d.limits.bytes) {
		t.Fatalf("reading past the budget: %d bytes allocated", alloc)
	}
}

// One entry of a million empty values is 2 MB on the wire, within the byte
// budget, but would cost go-ldap a packet (hundreds of bytes) per value:
// the element limit refuses it first.
func TestHostileManyTinyElements(t *testing.T) {
	values := bytes.Repeat([]byte{0x04, 0x00}, 1<<20)
	attr := tlv(0x30, append(tlv(0x04, []byte("member")), tlv(0x31, values)...))
	op := tlv(0x64, append(tlv(0x04, []byte("cn=staff,dc=org")), tlv(0x30, attr)...))
	f := startFake(t, bindThen(func(c net.Conn, r request) {
		_, _ = c.Write(tlv(0x30, append([]byte{0x02, 0x01, byte(r.id)}, op...)))
	}))
	d := newFake(t, f, func(c *Config) { c.Timeout = 30 * time.Second })
	var err error
	alloc := testutil.Allocated(func() { _, err = d.Members(context.Background(), "staff") })
	wantKind(t, err, Permanent, errTooManyParts.Error())
	t.Logf("refused after %d bytes allocated", alloc)
	if alloc > 32<<20 {
		t.Fatalf("a million empty values cost %d bytes", alloc)
	}
}

// A referral in a result is refused, whatever it points at.
func TestHostileReferralResult(t *testing.T) {
	f := startFake(t, bindThen(func(c net.Conn, r request) {
		if r.tag == ldap.ApplicationSearchRequest {
			_, _ = c.Write(message(r.id, entry("uid=alice,ou=people,dc=example,dc=org", "uid", "alice")))
			reply(c, r, ldap.LDAPResultSuccess, "")
			return
		}
		reply(c, r, ldap.LDAPResultReferral, "", "ldap://elsewhere.example/"+hostilePassword)
	}))
	err := newFake(t, f).AddMember(context.Background(), "staff", "alice")
	wantKind(t, err, Permanent, reasonReferral)
	if !strings.Contains(err.Error(), "add member") {
		t.Fatalf("%q does not name the operation", err)
	}
}

// A search continuation reference (an entry held elsewhere) is an error,
// not an empty group.
func TestHostileSearchReference(t *testing.T) {
	f := startFake(t, bindThen(func(c net.Conn, r request) {
		_, _ = c.Write(message(r.id, reference("ldap://elsewhere.example/cn=staff,ou=groups,dc=example,dc=org")))
		reply(c, r, ldap.LDAPResultSuccess, "")
	}))
	members, err := newFake(t, f).Members(context.Background(), "staff")
	wantKind(t, err, Permanent, reasonReferral)
	if members != nil {
		t.Fatalf("members %v returned with the error", members)
	}
}

// A server echoing the password in every field of a refusal: the error
// says unauthorized and holds none of it.
func TestHostileBindRefusalEchoesPassword(t *testing.T) {
	f := startFake(t, func(c net.Conn, r request) {
		got := requestString(r, 2)
		_, _ = c.Write(message(r.id, result(ldap.ApplicationBindResponse, ldap.LDAPResultInvalidCredentials,
			"uid="+got, "wrong password "+got, "ldap://x/"+got)))
	})
	err := newFake(t, f).Check(context.Background())
	wantKind(t, err, Unauthorized, "Invalid Credentials")
	if binds := f.received(ldap.ApplicationBindRequest); len(binds) != 1 || requestString(binds[0], 2) != hostilePassword {
		t.Fatalf("the fake did not see the password it echoes: %d binds", len(binds))
	}
}

// Every LDAP result code that matters is classified as the caller needs.
func TestHostileResultCodes(t *testing.T) {
	for _, tc := range []struct {
		code uint16
		kind Kind
	}{
		{ldap.LDAPResultBusy, Transient},
		{ldap.LDAPResultUnavailable, Transient},
		{ldap.LDAPResultNoSuchObject, NotFound},
		{ldap.LDAPResultInsufficientAccessRights, Unauthorized},
		{ldap.LDAPResultConstraintViolation, Permanent},
		{ldap.LDAPResultObjectClassViolation, Permanent},
		{ldap.LDAPResultUnwillingToPerform, Permanent},
	} {
		t.Run(ldap.LDAPResultCodeMap[tc.code], func(t *testing.T) {
			f := startFake(t, bindThen(func(c net.Conn, r request) { reply(c, r, tc.code, hostilePassword) }))
			err := newFake(t, f, func(c *Config) { c.UserDN, c.UserSearchBase, c.UserSearchAttribute = "uid={subject},dc=org", "", "" }).
				RemoveMember(context.Background(), "staff", "alice")
			wantKind(t, err, tc.kind, ldap.LDAPResultCodeMap[tc.code])
			if tc.kind == NotFound && !IsPermanent(err) || tc.kind == Transient && !IsTransient(err) {
				t.Fatalf("IsPermanent/IsTransient disagree with kind %v", tc.kind)
			}
		})
	}
}

// "Already a member" and "not a member" are success.
func TestHostileIdempotentChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   uint16
		change func(*Directory) error
	}{
		{"add present", ldap.LDAPResultAttributeOrValueExists, func(d *Directory) error {
			return d.AddMember(context.Background(), "staff", "alice")
		}},
		{"remove absent", ldap.LDAPResultNoSuchAttribute, func(d *Directory) error {
			return d.RemoveMember(context.Background(), "staff", "alice")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFake(t, bindThen(func(c net.Conn, r request) { reply(c, r, tc.code, "") }))
			d := newFake(t, f, func(c *Config) { c.UserDN, c.UserSearchBase, c.UserSearchAttribute = "uid={subject},dc=org", "", "" })
			if err := tc.change(d); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Hostile names stay values: the filter and DNs on the wire are escaped.
func TestHostileNamesAreEscapedOnTheWire(t *testing.T) {
	const userDN = `uid=*)(uid=*,ou=people,dc=example,dc=org`
	f := startFake(t, bindThen(func(c net.Conn, r request) {
		if r.tag == ldap.ApplicationSearchRequest {
			_, _ = c.Write(message(r.id, entry(userDN, "uid", "*)(uid=*")))
		}
		reply(c, r, ldap.LDAPResultSuccess, "")
	}))
	if err := newFake(t, f).AddMember(context.Background(), "a,b=c", "*)(uid=*"); err != nil {
		t.Fatal(err)
	}
	search := f.received(ldap.ApplicationSearchRequest)
	if len(search) != 1 || searchFilter(t, search[0]) != `(uid=\2a\29\28uid=\2a)` {
		t.Fatalf("user search filter: %v", search)
	}
	if got := requestInt(search[0], 3); got != 2 {
		t.Fatalf("user search size limit %d, want 2 (exactly one must match)", got)
	}
	modify := f.received(ldap.ApplicationModifyRequest)
	if len(modify) != 1 || requestString(modify[0], 0) != `cn=a\,b=c,ou=groups,dc=example,dc=org` {
		t.Fatalf("modify DN: %q", requestString(modify[0], 0))
	}
	value := modify[0].op.Children[1].Children[0].Children[1].Children[1].Children[0]
	if string(value.Data.Bytes()) != userDN {
		t.Fatalf("member value %q, want the searched DN", value.Data.Bytes())
	}
}

// The server's size limit is MaxEntries and the client holds to it when
// the server does not.
func TestHostileTooManyEntries(t *testing.T) {
	f := startFake(t, bindThen(func(c net.Conn, r request) {
		for i := range 4 {
			_, _ = c.Write(message(r.id, entry("uid=u"+string(rune('a'+i))+",dc=org", "uid", "u")))
		}
		reply(c, r, ldap.LDAPResultSuccess, "")
	}))
	d := newFake(t, f, func(c *Config) { c.MaxEntries = 3 })
	err := d.AddMember(context.Background(), "staff", "alice")
	wantKind(t, err, Permanent, reasonAmbiguous)

	// Members' mapping search: the group names four DNs, the search
	// under the base returns four entries, MaxEntries is 3.
	f = startFake(t, bindThen(func(c net.Conn, r request) {
		var dns []string
		for i := range 4 {
			dns = append(dns, "uid=u"+string(rune('a'+i))+",dc=org")
		}
		if requestInt(r, 1) == int64(ldap.ScopeBaseObject) {
			_, _ = c.Write(message(r.id, entry("cn=staff,dc=org", "member", dns...)))
		} else {
			if got := requestInt(r, 3); got != 3 {
				t.Errorf("mapping search size limit %d, want MaxEntries", got)
			}
			for _, dn := range dns {
				_, _ = c.Write(message(r.id, entry(dn, "uid", dn[4:6])))
			}
		}
		reply(c, r, ldap.LDAPResultSuccess, "")
	}))
	_, err = newFake(t, f, func(c *Config) { c.MaxEntries = 3 }).Members(context.Background(), "staff")
	wantKind(t, err, Permanent, reasonTooMany)
}

// More member values than MaxValues, or values in ranges, are refused.
func TestHostileGroupValues(t *testing.T) {
	for name, tc := range map[string]struct {
		attr   string
		values int
		reason string
	}{
		"too many": {"member", 6, reasonTooManyVals},
		"ranged":   {"member;range=0-1", 2, reasonRanged},
	} {
		t.Run(name, func(t *testing.T) {
			f := startFake(t, bindThen(func(c net.Conn, r request) {
				_, _ = c.Write(message(r.id, entry("cn=staff,dc=org", tc.attr, strings.Split("a b c d e f", " ")[:tc.values]...)))
				reply(c, r, ldap.LDAPResultSuccess, "")
			}))
			_, err := newFake(t, f, func(c *Config) { c.MaxValues = 5 }).Members(context.Background(), "staff")
			wantKind(t, err, Permanent, tc.reason)
		})
	}
}

// Nothing listening is transient, and says where it tried.
func TestHostileConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	d, err := New(Config{URL: "ldap://" + addr, BindDN: "cn=admin", BindPassword: hostilePassword,
		GroupDN: "cn={group},dc=org", MemberAttribute: "memberUid"})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Check(context.Background())
	wantKind(t, err, Transient, "connection refused")
	if !strings.Contains(err.Error(), addr) {
		t.Fatalf("%q does not name %s", err, addr)
	}
}

// The caller's dialer is the only way out: its refusal reaches the caller
// for errors.Is.
func TestDialerIsUsed(t *testing.T) {
	denied := errors.New("address denied by policy")
	cfg := fakeConfig(&fakeServer{ln: closedListener(t)})
	cfg.Dial = func(context.Context, string, string) (net.Conn, error) { return nil, denied }
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Check(context.Background()); !errors.Is(err, denied) || !IsTransient(err) {
		t.Fatalf("got %v, want the dialer's error", err)
	}
}

func TestClosedDirectoryRefuses(t *testing.T) {
	d := newFake(t, &fakeServer{ln: closedListener(t)})
	_ = d.Close()
	wantKind(t, d.Check(context.Background()), Permanent, reasonClosed)
}

func closedListener(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close()
	return ln
}

func streamZeros(c net.Conn) {
	zeros := make([]byte, 64<<10)
	for {
		if _, err := c.Write(zeros); err != nil {
			return
		}
	}
}

// noGoroutinesLeft waits for go-ldap's reader and processor goroutines of
// finished operations to end.
func noGoroutinesLeft(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, "go-ldap goroutines end", func() error {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if strings.Contains(stacks, "go-ldap/ldap/v3.(*Conn).reader") || strings.Contains(stacks, "go-ldap/ldap/v3.(*Conn).processMessages") {
			return errors.New("go-ldap goroutines still running")
		}
		return nil
	})
}
