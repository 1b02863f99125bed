package directory

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"time"

	"github.com/go-ldap/ldap/v3"
)

// session is one operation's connection, bound and bounded.
type session struct {
	conn  *ldap.Conn
	raw   net.Conn
	guard *guardConn
	// stop undoes the cancellation hook once the operation is over.
	stop func() bool
}

// open dials, wraps the connection in the reply guard, and binds, all
// before ctx's deadline, which the connection itself enforces: go-ldap's
// reads and writes fail when it passes or when ctx is canceled.
func (d *Directory) open(ctx context.Context, op string) (*session, error) {
	raw, err := d.dial(ctx, "tcp", d.addr)
	if err != nil {
		return nil, dialError(ctx, op, err)
	}
	deadline, _ := ctx.Deadline()
	if err := raw.SetDeadline(deadline); err != nil {
		_ = raw.Close()
		return nil, newError(Transient, op, 0, reasonConnection, err)
	}
	s := &session{raw: raw}
	s.stop = context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Unix(1, 0)) })
	c := raw
	if d.tls != nil {
		tc := tls.Client(raw, d.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			s.close()
			return nil, tlsError(ctx, op, err)
		}
		c = tc
	}
	s.guard = newGuardConn(c, d.limits)
	s.conn = ldap.NewConn(s.guard, d.tls != nil)
	s.conn.Start()
	s.conn.SetTimeout(time.Until(deadline))
	if err := d.bind(s); err != nil {
		s.close()
		return nil, failure(ctx, op+" bind", s.guard, err)
	}
	return s, nil
}

func (d *Directory) bind(s *session) error {
	if d.cfg.BindDN == "" {
		return s.conn.UnauthenticatedBind("")
	}
	return s.conn.Bind(d.cfg.BindDN, d.cfg.BindPassword)
}

func (s *session) close() {
	s.stop()
	if s.conn != nil {
		_ = s.conn.Close()
	}
	_ = s.raw.Close()
}

// search runs req with the server's size and time limits, go-ldap
// enforcing the size limit too, and refuses continuation references: an
// entry the server only points at is an error, never a silent absence.
func (s *session) search(req *ldap.SearchRequest) ([]*ldap.Entry, error) {
	req.EnforceSizeLimit = true
	req.DerefAliases = ldap.NeverDerefAliases
	res, err := s.conn.Search(req)
	if err != nil {
		return nil, err
	}
	if len(res.Referrals) > 0 {
		return nil, newError(Permanent, "", 0, reasonReferral, nil)
	}
	return res.Entries, nil
}

// dialError keeps the dialer's text: nothing has been sent yet, so it can
// hold no credential, and it names the address or the policy that refused
// it (the cause stays for errors.Is, e.g. a policy's sentinel error).
func dialError(ctx context.Context, op string, err error) *Error {
	if cerr := ctx.Err(); cerr != nil {
		return contextError(op, cerr)
	}
	return newError(Transient, op, 0, reasonConnection+": "+err.Error(), err)
}

// tlsError tells a certificate the CA does not vouch for (a configuration
// to fix) from a handshake the network broke.
func tlsError(ctx context.Context, op string, err error) *Error {
	if cerr := ctx.Err(); cerr != nil {
		return contextError(op, cerr)
	}
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host) || errors.As(err, &verify) {
		return newError(Permanent, op, 0, "TLS: "+err.Error(), err)
	}
	return newError(Transient, op, 0, "TLS handshake failed", netCause(err))
}
