package webhook

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	tests := []struct {
		name         string
		url          string
		allowPrivate bool
		wantErr      string // "" for accepted
	}{
		{name: "https", url: "https://hooks.example.com/oncepost?x=1"},
		{name: "https with port", url: "https://hooks.example.com:8443/in"},
		{name: "public literal", url: "https://93.184.215.14/in"},
		{name: "public IPv6 literal", url: "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/in"},
		{name: "http to localhost, private allowed", url: "http://localhost:8080/in", allowPrivate: true},
		{name: "http to 127.0.0.1, private allowed", url: "http://127.0.0.1:8080/in", allowPrivate: true},
		{name: "http to ::1, private allowed", url: "http://[::1]:8080/in", allowPrivate: true},
		{name: "private literal, allowed", url: "https://10.0.0.1/in", allowPrivate: true},
		{name: "metadata", url: "https://169.254.169.254/latest/meta-data/",
			wantErr: "url: 169.254.169.254 is a link-local address (cloud metadata); receivers must be public unless private ones are allowed (--allow-private, or allow_private in the API)"},
		{name: "10/8", url: "https://10.0.0.1/in", wantErr: "10.0.0.1 is a private address"},
		{name: "mapped 10/8", url: "https://[::ffff:10.0.0.1]/in", wantErr: "::ffff:10.0.0.1 is a private address"},
		{name: "CGNAT", url: "https://100.64.0.1/in", wantErr: "100.64.0.1 is a shared address (carrier-grade NAT)"},
		{name: "benchmarking", url: "https://198.18.0.1/in", wantErr: "198.18.0.1 is a benchmarking address"},
		{name: "172.16/12", url: "https://172.31.255.255/in", wantErr: "private address"},
		{name: "192.168/16", url: "https://192.168.1.1/in", wantErr: "private address"},
		{name: "this network", url: "https://0.0.0.0/in", wantErr: "\"this network\" address"},
		{name: "loopback literal", url: "https://127.0.0.2/in", wantErr: "loopback address"},
		{name: "IPv6 loopback", url: "https://[::1]/in", wantErr: "loopback address"},
		{name: "IPv6 metadata", url: "https://[fd00:ec2::254]/in", wantErr: "the cloud metadata address"},
		{name: "IPv6 ULA", url: "https://[fd12::1]/in", wantErr: "unique local"},
		{name: "IPv6 link-local", url: "https://[fe80::1]/in", wantErr: "link-local"},
		{name: "NAT64", url: "https://[64:ff9b::a00:1]/in", wantErr: "NAT64"},
		{name: "multicast", url: "https://224.0.0.1/in", wantErr: "multicast"},
		{name: "reserved", url: "https://255.255.255.255/in", wantErr: "reserved"},
		{name: "localhost", url: "https://localhost/in", wantErr: "localhost is a loopback name"},
		{name: "name under localhost", url: "https://app.localhost./in", wantErr: "loopback name"},
		{name: "http off loopback", url: "http://hooks.example.com/in", wantErr: "http is allowed only to a loopback host"},
		{name: "http to private, allowed", url: "http://10.0.0.1/in", allowPrivate: true, wantErr: "http is allowed only to a loopback host"},
		{name: "other scheme", url: "ftp://hooks.example.com/in", wantErr: "scheme \"ftp\" is not https"},
		{name: "relative", url: "/hooks/in", wantErr: "must be absolute"},
		{name: "no host", url: "https:///in", wantErr: "must be absolute"},
		{name: "opaque", url: "https:hooks.example.com", wantErr: "must be absolute"},
		{name: "userinfo", url: "https://user:pass@hooks.example.com/in", wantErr: "user name or password"},
		{name: "fragment", url: "https://hooks.example.com/in#x", wantErr: "fragment"},
		{name: "empty fragment", url: "https://hooks.example.com/in#", wantErr: "fragment"},
		{name: "port 0", url: "https://hooks.example.com:0/in", wantErr: "port \"0\" is not in 1..65535"},
		{name: "port too big", url: "https://hooks.example.com:65536/in", wantErr: "port \"65536\" is not in 1..65535"},
		{name: "not a URL", url: "https://hooks example.com/in", wantErr: "url: not a URL"},
		{name: "empty", url: "", wantErr: "url is empty"},
		{name: "too long", url: "https://hooks.example.com/" + strings.Repeat("a", MaxURLBytes), wantErr: "over the limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckURL(tc.url, tc.allowPrivate)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want nil", tc.url, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("CheckURL(%q) = %v, want an error saying %q", tc.url, err, tc.wantErr)
			}
		})
	}
}

// TestDialCheck: the dialer's Control, given the resolved address of a
// connection, refuses the blocked ranges (IPv4-mapped addresses as their
// IPv4 address) and lets public addresses through.
func TestDialCheck(t *testing.T) {
	tests := []struct {
		address string
		want    string // "" for allowed
	}{
		{"169.254.169.254:80", "169.254.169.254 is a link-local address (cloud metadata)"},
		{"10.0.0.1:443", "10.0.0.1 is a private address"},
		{"[::ffff:10.0.0.1]:443", "10.0.0.1 is a private address"},
		{"[::ffff:127.0.0.1]:443", "127.0.0.1 is a loopback address"},
		{"100.64.0.1:443", "100.64.0.1 is a shared address"},
		{"198.18.0.1:443", "198.18.0.1 is a benchmarking address"},
		{"198.19.255.255:443", "benchmarking"},
		{"127.0.0.1:8080", "127.0.0.1 is a loopback address"},
		{"0.0.0.0:443", "\"this network\""},
		{"192.0.0.170:443", "IETF protocol"},
		{"[::1]:443", "::1 is a loopback address"},
		{"[::]:443", "the unspecified address"},
		{"[fd00:ec2::254]:80", "the cloud metadata address"},
		{"[fe80::1%eth0]:443", "fe80::1 is a link-local address"},
		{"[ff02::1]:443", "multicast"},
		{"[64:ff9b::a9fe:a9fe]:80", "NAT64"},
		{"93.184.215.14:443", ""},
		{"100.128.0.1:443", ""},
		{"172.32.0.1:443", ""},
		{"198.20.0.1:443", ""},
		{"[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443", ""},
	}
	for _, tc := range tests {
		t.Run(tc.address, func(t *testing.T) {
			err := checkDial("tcp", tc.address, nil)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("checkDial(%s) = %v, want nil", tc.address, err)
				}
				return
			}
			var ae *AddressError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkDial(%s) = %v, want an AddressError saying %q", tc.address, err, tc.want)
			}
			if !strings.HasSuffix(err.Error(), mustBePublic) {
				t.Errorf("error %q does not say how to allow it", err)
			}
		})
	}
	if err := checkDial("udp", "93.184.215.14:53", nil); err == nil {
		t.Error("checkDial let udp through")
	}
}
