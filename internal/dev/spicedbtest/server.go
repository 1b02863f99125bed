// Package spicedbtest starts a real SpiceDB (bin/spicedb, built from Go
// modules by `make bin/spicedb`) for tests: in-memory datastore, every
// listener on loopback, telemetry and the release check off, stopped when
// the test ends.
package spicedbtest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	v1 "github.com/authzed/authzed-go/proto/authzed/api/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/spicedb"
)

// Server is a running SpiceDB.
type Server struct {
	// Endpoint is the gRPC address, 127.0.0.1:PORT.
	Endpoint string
	// Key is the preshared key.
	Key string
}

// Options configure the server.
type Options struct {
	// Quantization is --datastore-revision-quantization-interval; SpiceDB's
	// 5s default when zero.
	Quantization time.Duration
	// NoExtraStaleness sets the quantization's max staleness percent to 0
	// (SpiceDB's default 10% may serve a revision up to 1.1 intervals old),
	// so a revocation lag is bounded by the interval itself.
	NoExtraStaleness bool
}

// Start runs SpiceDB until t ends. It fails t, naming the make target, when
// the binary is missing: the tests need the real engine.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatalf("%v: run 'make bin/spicedb' (or make test) to build SpiceDB from Go modules", err)
	}
	key := testutil.RandomKey(t, "spicedb-test-")
	grpcPort, metricsPort := testutil.FreePort(t), testutil.FreePort(t)
	quant := opts.Quantization
	if quant == 0 {
		quant = 5 * time.Second
	}
	args := []string{"serve",
		"--datastore-engine", "memory",
		"--grpc-preshared-key", key,
		"--grpc-addr", "127.0.0.1:" + grpcPort,
		"--http-enabled=false",
		"--dispatch-cluster-enabled=false",
		"--metrics-addr", "127.0.0.1:" + metricsPort,
		// Never report to an outside host, never ask for new releases.
		"--telemetry-endpoint=",
		"--skip-release-check",
		"--datastore-revision-quantization-interval", quant.String(),
		"--log-level", "warn",
	}
	if opts.NoExtraStaleness {
		args = append(args, "--datastore-revision-quantization-max-staleness-percent=0")
	}
	proc := testutil.StartProcess(t, "spicedb", exec.Command(bin, args...))
	s := &Server{Endpoint: "127.0.0.1:" + grpcPort, Key: key}
	client, err := spicedb.Dial(s.Endpoint, key, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "spicedb serving", func() error {
		if err := proc.Exited(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := client.ReadSchema(ctx, &v1.ReadSchemaRequest{})
		if status.Code(err) == codes.NotFound { // serving, no schema yet
			return nil
		}
		return err
	})
	return s
}

// binary finds bin/spicedb above the working directory.
func binary() (string, error) {
	if p := os.Getenv("RAGCANARY_SPICEDB"); p != "" {
		return p, nil
	}
	return testutil.RepoBinary("spicedb")
}
