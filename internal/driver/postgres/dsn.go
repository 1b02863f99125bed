package postgres

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// DSNSettings returns the options a connection string itself sets, split
// exactly as pgx (pgconn.ParseConfig, v5) splits it, without the defaults,
// the environment or any file pgx would add. A check of the keys must see
// what the connection will use: libpq-style splitting by eye is not enough
// (pgx ends a value at any ASCII space, \v included, and starts a key right
// after a closing quote; only the exact "postgres://" and "postgresql://"
// prefixes make a URL). "dbname" is reported as "database", as pgx does.
func DSNSettings(dsn string) (map[string]string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return urlSettings(dsn)
	}
	return keywordSettings(dsn)
}

func urlSettings(dsn string) (map[string]string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, ErrInvalidDSN
	}
	settings := map[string]string{}
	if u.User != nil {
		if name := u.User.Username(); name != "" {
			settings["user"] = name
		}
		if password, ok := u.User.Password(); ok {
			settings["password"] = password
		}
	}
	if hosts, ports := urlHosts(u.Host); len(hosts) > 0 || len(ports) > 0 {
		if len(hosts) > 0 {
			settings["host"] = strings.Join(hosts, ",")
		}
		if len(ports) > 0 {
			settings["port"] = strings.Join(ports, ",")
		}
	}
	if db := strings.TrimLeft(u.Path, "/"); db != "" {
		settings["database"] = db
	}
	for k, v := range u.Query() {
		settings[canonicalKey(k)] = v[0]
	}
	return settings, nil
}

// urlHosts splits a URL's host list as pgx does; a host that does not split
// is left out (pgx then refuses the string).
func urlHosts(list string) (hosts, ports []string) {
	for _, h := range strings.Split(list, ",") {
		if h == "" {
			continue
		}
		if net.ParseIP(strings.Trim(h, "[]")) != nil || !strings.Contains(h, ":") {
			hosts = append(hosts, strings.Trim(h, "[]"))
			continue
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			continue
		}
		if host != "" {
			hosts = append(hosts, host)
		}
		if port != "" {
			ports = append(ports, port)
		}
	}
	return hosts, ports
}

// asciiSpace is what ends an unquoted value and is trimmed around keys.
const asciiSpace = " \t\n\r\v\f"

func keywordSettings(s string) (map[string]string, error) {
	settings := map[string]string{}
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, ErrInvalidDSN
		}
		key := strings.Trim(s[:eq], asciiSpace)
		s = strings.TrimLeft(s[eq+1:], asciiSpace)
		var val string
		var err error
		if len(s) > 0 && s[0] == '\'' {
			val, s, err = quotedValue(s[1:])
		} else {
			val, s, err = bareValue(s)
		}
		if err != nil || key == "" {
			return nil, ErrInvalidDSN
		}
		key = canonicalKey(key)
		if key == "user" && val == "" {
			continue
		}
		settings[key] = val
	}
	return settings, nil
}

// bareValue reads an unquoted value up to the first ASCII space; a
// backslash escapes the next byte.
func bareValue(s string) (val, rest string, err error) {
	end := 0
	for ; end < len(s); end++ {
		if strings.IndexByte(asciiSpace, s[end]) >= 0 {
			break
		}
		if s[end] == '\\' {
			end++
			if end == len(s) {
				return "", "", errors.New("invalid backslash")
			}
		}
	}
	val = unescape(s[:end])
	if end < len(s) {
		end++
	}
	return val, s[end:], nil
}

// quotedValue reads a value after its opening quote, up to the closing
// one. What follows the closing quote starts the next key at once.
func quotedValue(s string) (val, rest string, err error) {
	end := 0
	for ; end < len(s); end++ {
		if s[end] == '\'' {
			break
		}
		if s[end] == '\\' {
			end++
		}
	}
	if end >= len(s) {
		return "", "", errors.New("unterminated quoted string")
	}
	return unescape(s[:end]), s[end+1:], nil
}

func unescape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\\`, `\`), `\'`, `'`)
}

func canonicalKey(k string) string {
	if k == "dbname" {
		return "database"
	}
	return k
}
