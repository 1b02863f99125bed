package ragtarget

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// LoadTokens reads a JSON or YAML file mapping persona tokens to principals.
// Errors name the file but never its content, which is secret.
func LoadTokens(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tokens file %s: %w", path, errors.Unwrap(err))
	}
	var tokens map[string]string
	if err := yaml.Unmarshal(data, &tokens); err != nil {
		return nil, fmt.Errorf("tokens file %s is not a JSON or YAML map of token to principal", path)
	}
	return tokens, nil
}

// ParseTokenFlag parses "token=principal". The error never repeats the value.
func ParseTokenFlag(v string) (token, principal string, err error) {
	token, principal, ok := strings.Cut(v, "=")
	if !ok || token == "" || principal == "" {
		return "", "", errors.New("--token must look like token=principal")
	}
	return token, principal, nil
}
