// Package spicedb keeps document permissions in a SpiceDB authorization
// engine: the operator writes and deletes relationships for grants and group
// memberships (Permissions), and the reference target asks it at query time
// which documents a principal may read (Authorizer). Both speak the same
// mapping of ragcanary's operations onto a schema.
package spicedb

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"regexp"
	"time"

	authzed "github.com/authzed/authzed-go/v1"
	"github.com/authzed/grpcutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Mapping names the schema's definitions and relations ragcanary uses:
// a grant is documentType:<doc>#grantRelation@subjectType:<principal> (or
// @groupType:<group>#memberRelation for a group), a membership is
// groupType:<group>#memberRelation@subjectType:<principal>.
type Mapping struct {
	DocumentType   string
	GrantRelation  string
	GroupType      string
	MemberRelation string
	SubjectType    string
}

// DefaultMapping is the mapping of the reference schema.
var DefaultMapping = Mapping{DocumentType: "document", GrantRelation: "viewer", GroupType: "group", MemberRelation: "member", SubjectType: "user"}

// WithDefaults fills empty names from DefaultMapping.
func (m Mapping) WithDefaults() Mapping {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	d := DefaultMapping
	return Mapping{DocumentType: or(m.DocumentType, d.DocumentType), GrantRelation: or(m.GrantRelation, d.GrantRelation),
		GroupType: or(m.GroupType, d.GroupType), MemberRelation: or(m.MemberRelation, d.MemberRelation), SubjectType: or(m.SubjectType, d.SubjectType)}
}

// Schema is the reference schema for m: a document readable by users
// granted directly or through a group's members.
func (m Mapping) Schema() string {
	return fmt.Sprintf(`definition %[5]s {}

definition %[3]s {
	relation %[4]s: %[5]s
}

definition %[1]s {
	relation %[2]s: %[5]s | %[3]s#%[4]s
}
`, m.DocumentType, m.GrantRelation, m.GroupType, m.MemberRelation, m.SubjectType)
}

// objectID is SpiceDB's object ID syntax; principals and document IDs that
// do not fit are refused rather than rewritten, so what is in SpiceDB is
// exactly what the user's application reads.
var objectIDChars = regexp.MustCompile(`^[a-zA-Z0-9/_|\-=+]+$`)

// validObjectID is SpiceDB's object ID rule: those characters, at most 1024.
func validObjectID(id string) bool { return len(id) <= 1024 && objectIDChars.MatchString(id) }

// Dial connects to endpoint (host:port) with the preshared key. insecure
// means plaintext gRPC, for loopback and test engines; otherwise TLS with the
// system roots.
//
// dial, when not nil, opens every connection (the door's, which enforces
// its address policy on the resolved address).
func Dial(endpoint, key string, plaintext bool, dial func(ctx context.Context, network, address string) (net.Conn, error)) (*authzed.Client, error) {
	// No proxy from the environment: the key would travel through a host
	// the allowlist never saw (the HTTP transport disables proxies too).
	opts := []grpc.DialOption{grpc.WithNoProxy()}
	if dial != nil {
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		}))
	}
	if plaintext {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()), grpcutil.WithInsecureBearerToken(key))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})),
			grpcutil.WithBearerToken(key))
	}
	c, err := authzed.NewClient(endpoint, opts...)
	if err != nil {
		return nil, errors.New("spicedb: invalid endpoint")
	}
	return c, nil
}

// callTimeout bounds a call when the caller's context has no deadline.
const callTimeout = 10 * time.Second

func bounded(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = callTimeout
	}
	return context.WithTimeout(ctx, timeout)
}

// errorCode is the gRPC code of err, for classification; never its text,
// which may echo request contents.
func errorCode(err error) codes.Code {
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return codes.DeadlineExceeded
	}
	return codes.Unknown
}
