package webhook

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// MaxURLBytes bounds a receiver URL.
const MaxURLBytes = 2048

// mustBePublic ends every refusal of a non-public address.
const mustBePublic = "receivers must be public unless private ones are allowed (--allow-private, or allow_private in the API)"

// blockedRanges are the addresses no receiver may have unless its
// subscription allows private receivers: the IANA special-purpose ranges
// that reach this machine, its network, a cloud's metadata service or
// nowhere public. net.IP's helpers (IsPrivate, IsLoopback…) miss carrier-
// grade NAT and the benchmarking range, so the list is explicit. It is
// kept here rather than taken from code.dny.dev/ssrf so that a refusal
// can say what the address is (the operator reads it in a delivery's
// last error), and because that library's defaults allow ports 80 and
// 443 only. The first match names the address; the metadata address
// precedes the unique-local range that holds it.
var blockedRanges = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared address (carrier-grade NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "the cloud metadata address"},
	{netip.MustParsePrefix("fc00::/7"), "a unique local (private) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address"},
}

// blockedAs says what kind of non-public address a is ("" for a public
// one). An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is checked as the
// IPv4 address it maps, and a zone is ignored.
func blockedAs(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	for _, r := range blockedRanges {
		if r.prefix.Contains(a) {
			return r.what
		}
	}
	return ""
}

// AddressError is a refused receiver address: one in a blocked range, for
// a subscription that does not allow private receivers.
type AddressError struct {
	// Addr is the refused address as written in the URL or dialed.
	Addr string
	// What the address is ("a private address", …).
	What string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("%s is %s; %s", e.Addr, e.What, mustBePublic)
}

// CheckURL checks a receiver URL before a subscription is made with it.
// It must be absolute and https, or http only to a loopback host
// (localhost, 127.0.0.0/8, ::1); no user name or password, no fragment; a
// port, if any, in 1..65535. Unless allowPrivate, a host that is a literal
// address in a blocked range, or localhost, is refused. The errors name
// the problem and start with "url:". A host name is not resolved here:
// the Sender's dialer checks every address a name resolves to when it
// connects.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := parseReceiverURL(raw)
	if err != nil {
		return err
	}
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	if isLocalhostName(host) {
		return fmt.Errorf("url: %s is a loopback name; %s", host, mustBePublic)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if what := blockedAs(a); what != "" {
			return fmt.Errorf("url: %w", &AddressError{Addr: host, What: what})
		}
	}
	return nil
}

// parseReceiverURL parses raw and checks its shape (everything CheckURL
// checks but the addresses).
func parseReceiverURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("url is empty")
	}
	if len(raw) > MaxURLBytes {
		return nil, fmt.Errorf("url is %d bytes, over the limit of %d", len(raw), MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the whole URL, which may carry a token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("url: not a URL: %w", err)
	}
	switch {
	case !u.IsAbs() || u.Opaque != "" || u.Host == "":
		return nil, errors.New("url: must be absolute, as https://host/path")
	case u.User != nil:
		return nil, errors.New("url: must not carry a user name or password")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, errors.New("url: must not have a fragment (#…)")
	case u.Hostname() == "":
		return nil, errors.New("url: has no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("url: port %q is not in 1..65535", p)
		}
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopbackHost(u.Hostname()) {
			return nil, fmt.Errorf("url: http is allowed only to a loopback host (localhost); use https for %s", u.Hostname())
		}
	default:
		return nil, fmt.Errorf("url: scheme %q is not https", u.Scheme)
	}
	return u, nil
}

// isLocalhostName reports whether host is localhost or a name under
// .localhost (RFC 6761: they resolve to loopback).
func isLocalhostName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// isLoopbackHost reports whether host is a localhost name or a literal
// loopback address.
func isLoopbackHost(host string) bool {
	if isLocalhostName(host) {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// checkDial is the public dialer's Control: it runs for every connection
// attempt, with the resolved address about to be connected to, and
// refuses an address in a blocked range (so a name that resolves to one
// is refused however it resolved, and whenever).
func checkDial(network, address string, _ syscall.RawConn) error {
	if !strings.HasPrefix(network, "tcp") {
		return fmt.Errorf("network %s: receivers are reached over tcp only", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: not an address and port: %w", address, err)
	}
	if what := blockedAs(ap.Addr()); what != "" {
		return &AddressError{Addr: ap.Addr().WithZone("").String(), What: what}
	}
	return nil
}
