package directory

import (
	"errors"
	"net"
	"sync"
)

// replyLimits bound what one operation reads from the server. Bytes alone
// do not bound memory: go-ldap builds a packet tree of a few hundred bytes
// for every BER element, and an element can be two bytes on the wire, so
// elements are bounded too, per LDAP message (the tree held at once) and
// per operation (the entries kept).
type replyLimits struct {
	bytes           int64
	elements        int64
	messageElements int64
}

// Reply bounds, derived from MaxValues: an honest group entry is one
// element per value plus a little structure, and an honest Members call
// reads the group and one small entry (about ten elements, at most a few
// hundred bytes) per member.
const (
	minReplyBytes        = 4 << 20
	replyBytesPerValue   = 512
	messageElementsSlack = 1024
	elementsPerValue     = 16
)

func limitsFor(maxValues int) replyLimits {
	perMessage := int64(maxValues) + messageElementsSlack
	return replyLimits{
		bytes:           max(minReplyBytes, replyBytesPerValue*int64(maxValues)),
		elements:        elementsPerValue * perMessage,
		messageElements: perMessage,
	}
}

var (
	errReplyTooLarge = errors.New("reply larger than allowed")
	errTooManyParts  = errors.New("reply has more BER elements than allowed")
	errMalformedBER  = errors.New("malformed reply (BER)")
)

// guardConn is the connection go-ldap reads from: it scans every byte
// before go-ldap sees it and fails the connection once the reply is over
// its limits, so go-ldap never reads, or allocates for, more. Only
// go-ldap's reader goroutine calls Read; the operation asks tripped().
type guardConn struct {
	net.Conn
	scan berScanner

	mu  sync.Mutex
	err error
}

func newGuardConn(c net.Conn, limits replyLimits) *guardConn {
	return &guardConn{Conn: c, scan: berScanner{limits: limits}}
}

func (g *guardConn) Read(p []byte) (int, error) {
	if err := g.tripped(); err != nil {
		return 0, err
	}
	n, err := g.Conn.Read(p)
	if serr := g.scan.feed(p[:n]); serr != nil {
		g.mu.Lock()
		g.err = serr
		g.mu.Unlock()
		return 0, serr
	}
	return n, err
}

// tripped is the limit the reply broke, or nil.
func (g *guardConn) tripped() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// berScanner follows the BER structure of a stream of LDAP messages just
// far enough to count elements: a header is followed by its children when
// constructed, or by content to pass over when primitive. LDAP allows only
// definite lengths (RFC 4511 section 5.1), so no nesting needs tracking.
type berScanner struct {
	limits replyLimits

	read, elements, msgElements int64
	// msgLeft is what remains of the current LDAPMessage; 0 between messages.
	msgLeft int64
	// skip is the content of a primitive element still to pass over.
	skip int64
	hdr  berHeader
}

type headerStep int

const (
	stepTag headerStep = iota
	stepTagMore
	stepLength
	stepLengthMore
)

// berHeader is a header being read, byte by byte.
type berHeader struct {
	step        headerStep
	top         bool // an LDAPMessage's own header
	constructed bool
	tagBytes    int
	lenBytes    int
	length      int64
}

// Longest tag continuation and length field accepted: LDAP uses one-byte
// tags, and four length bytes already exceed any reply budget.
const (
	maxTagBytes    = 4
	maxLengthBytes = 4
)

func (s *berScanner) feed(p []byte) error {
	s.read += int64(len(p))
	if s.read > s.limits.bytes {
		return errReplyTooLarge
	}
	for len(p) > 0 {
		if s.skip > 0 {
			n := min(s.skip, int64(len(p)))
			s.skip -= n
			s.msgLeft -= n
			p = p[n:]
			continue
		}
		if err := s.headerByte(p[0]); err != nil {
			return err
		}
		p = p[1:]
	}
	return nil
}

func (s *berScanner) headerByte(b byte) error {
	h := &s.hdr
	if h.step == stepTag {
		h.top = s.msgLeft == 0
	}
	if !h.top {
		if s.msgLeft == 0 {
			return errMalformedBER // a header running past its message
		}
		s.msgLeft--
	}
	switch h.step {
	case stepTag:
		h.constructed = b&0x20 != 0
		h.step = stepLength
		if b&0x1f == 0x1f {
			h.step, h.tagBytes = stepTagMore, 0
		}
	case stepTagMore:
		if h.tagBytes++; h.tagBytes > maxTagBytes {
			return errMalformedBER
		}
		if b&0x80 == 0 {
			h.step = stepLength
		}
	case stepLength:
		return s.lengthByte(b)
	case stepLengthMore:
		h.length = h.length<<8 | int64(b)
		if h.lenBytes--; h.lenBytes == 0 {
			return s.endHeader()
		}
	}
	return nil
}

func (s *berScanner) lengthByte(b byte) error {
	h := &s.hdr
	switch {
	case b == 0x80:
		return errMalformedBER // indefinite length, which LDAP forbids
	case b < 0x80:
		h.length = int64(b)
		return s.endHeader()
	default:
		h.lenBytes, h.length = int(b&0x7f), 0
		if h.lenBytes > maxLengthBytes {
			return errMalformedBER
		}
		h.step = stepLengthMore
		return nil
	}
}

func (s *berScanner) endHeader() error {
	h := &s.hdr
	h.step = stepTag
	if h.top {
		if !h.constructed {
			return errMalformedBER // an LDAPMessage is a SEQUENCE
		}
		if h.length > s.limits.bytes {
			return errReplyTooLarge // declared too large: fail before reading it
		}
		s.msgLeft, s.msgElements = h.length, 0
	} else if h.length > s.msgLeft {
		return errMalformedBER
	}
	s.elements++
	s.msgElements++
	if s.elements > s.limits.elements || s.msgElements > s.limits.messageElements {
		return errTooManyParts
	}
	if !h.constructed {
		s.skip = h.length
	}
	return nil
}
