package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

// SuiteDocuments are the documents the sample EvalSuite is judged against;
// internal/suite's sample test plants the same file.
const SuiteDocuments = "config/samples/eval/access-isolation-documents.yaml"

// Credentials the samples in config/samples expect ragtarget to accept.
const (
	SourceToken = "demo-source-token"
	AliceToken  = "demo-alice-token"
)

// PlantSuiteDocuments writes the evidence the sample EvalSuite expects into
// the ragtarget at baseURL, then waits until its content sync has indexed
// them, so the suite's first run is judged against them. The canaries plant
// and remove their own documents.
func PlantSuiteDocuments(ctx context.Context, root, baseURL string) error {
	raw, err := os.ReadFile(filepath.Join(root, SuiteDocuments))
	if err != nil {
		return err
	}
	var docs []driver.Document
	if err := yaml.UnmarshalStrict(raw, &docs); err != nil {
		return fmt.Errorf("%s: %w", SuiteDocuments, err)
	}
	d, err := httpdriver.New(httpdriver.Config{BaseURL: baseURL, SourceToken: SourceToken, Timeout: 5 * time.Second, Retries: 5})
	if err != nil {
		return err
	}
	for _, doc := range docs {
		if err := d.CreateDocument(ctx, doc); err != nil {
			return fmt.Errorf("planting %s: %w", doc.ID, err)
		}
	}
	return waitIndexed(ctx, d, docs)
}

// waitIndexed polls, as alice (who may read every suite document), until
// each document is found by its title, for at most a minute.
func waitIndexed(ctx context.Context, d *httpdriver.Driver, docs []driver.Document) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for _, doc := range docs {
		for {
			hits, err := d.Search(ctx, AliceToken, doc.Title, 10)
			if err == nil && slices.ContainsFunc(hits, func(h driver.Hit) bool { return h.DocumentID == doc.ID }) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s not indexed by ragtarget within a minute (last error: %v)", doc.ID, err)
			case <-tick.C:
			}
		}
	}
	return nil
}
