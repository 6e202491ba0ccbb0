package environment

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// EndpointKind says what an allowlisted endpoint is; it decides where it may lead.
type EndpointKind string

// Endpoint kinds.
const (
	// EndpointControlPlane is the control plane's agent API (the serve child).
	EndpointControlPlane EndpointKind = "control_plane"
	// EndpointModel is the attempt's scripted model.
	EndpointModel EndpointKind = "model"
	// EndpointProvider is a live model provider's API host (only under --live).
	EndpointProvider EndpointKind = "provider"
)

// Endpoint is one entry of a lease's network allowlist: the only way out of a sandbox
// is a TCP connection to an endpoint's Listen address inside, which the sandbox's init
// carries over the bridge socket to the host, where the lease owner's forwarder dials
// Dial. The sandbox never chooses where a connection goes.
//
//   - Name: 1–32 characters of [a-z0-9-], unique in the allowlist.
//   - Listen: "host:port" the agent dials inside the sandbox: a loopback IPv4 address
//     (127.0.0.1:PORT, normally the port the agent is configured with), or a DNS name
//     that the sandbox's /etc/hosts maps to a loopback alias (api.example.com:443).
//   - Dial: "host:port" the host-side forwarder connects to. Control-plane and model
//     endpoints must dial a loopback address; a provider endpoint dials its own
//     Listen name (so TLS is end to end and the certificate is the provider's).
//   - Socket: the host path of the bridge socket (set by the provider at Setup).
type Endpoint struct {
	Name   string       `json:"name"`
	Kind   EndpointKind `json:"kind"`
	Listen string       `json:"listen"`
	Dial   string       `json:"dial"`
	Socket string       `json:"socket,omitempty"`
}

// Allowlist is a lease's endpoints. It is validated as a whole (Problems).
type Allowlist []Endpoint

var (
	endpointName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9-]{1,32}$`) })
	dnsName      = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?i:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.(?i:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?))*$`)
	})
)

// MaxEndpoints bounds an allowlist (each endpoint is a listener and a socket).
const MaxEndpoints = 16

// Problems lists what is wrong with the allowlist; provider endpoints are refused
// unless live. It returns nil for a valid one.
func (a Allowlist) Problems(live bool) []string {
	var p []string
	if len(a) > MaxEndpoints {
		p = append(p, fmt.Sprintf("%d endpoints, more than %d", len(a), MaxEndpoints))
	}
	names, listens := map[string]bool{}, map[string]bool{}
	for i, e := range a {
		at := fmt.Sprintf("endpoints[%d]", i)
		if !endpointName().MatchString(e.Name) {
			p = append(p, fmt.Sprintf("%s.name %q must be 1-32 characters of [a-z0-9-]", at, clip(e.Name)))
		} else if names[e.Name] {
			p = append(p, fmt.Sprintf("%s.name %q is listed twice", at, e.Name))
		}
		names[e.Name] = true
		lhost, _, lerr := SplitHostPort(e.Listen)
		if lerr != nil {
			p = append(p, fmt.Sprintf("%s.listen: %v", at, lerr))
		} else if ip := net.ParseIP(lhost); ip != nil && (ip.To4() == nil || !ip.IsLoopback()) {
			p = append(p, fmt.Sprintf("%s.listen %q must be a loopback IPv4 address or a DNS name", at, e.Listen))
		} else if listens[strings.ToLower(e.Listen)] {
			p = append(p, fmt.Sprintf("%s.listen %q is listed twice", at, e.Listen))
		}
		listens[strings.ToLower(e.Listen)] = true
		dhost, _, derr := SplitHostPort(e.Dial)
		if derr != nil {
			p = append(p, fmt.Sprintf("%s.dial: %v", at, derr))
		}
		switch e.Kind {
		case EndpointControlPlane, EndpointModel:
			if derr == nil && !isLoopback(dhost) {
				p = append(p, fmt.Sprintf("%s (%s) must dial a loopback address, not %q", at, e.Kind, e.Dial))
			}
		case EndpointProvider:
			if !live {
				p = append(p, fmt.Sprintf("%s is a provider endpoint (%s), allowed only under --live", at, e.Dial))
			}
			if lerr == nil && derr == nil && !strings.EqualFold(lhost, dhost) {
				p = append(p, fmt.Sprintf("%s (provider) must listen under the name it dials (%q ≠ %q)", at, lhost, dhost))
			}
			if lerr == nil && net.ParseIP(lhost) != nil {
				p = append(p, fmt.Sprintf("%s (provider) must name its host, not an address (%q)", at, lhost))
			}
		default:
			p = append(p, fmt.Sprintf("%s.kind %q is not control_plane, model or provider", at, clip(string(e.Kind))))
		}
	}
	return p
}

// SplitHostPort splits "host:port" where host is an IPv4 address or a DNS name and
// port is 1–65535. Errors name what is wrong.
func SplitHostPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port", clip(addr))
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || strings.HasPrefix(ps, "0") {
		return "", 0, fmt.Errorf("%q: port %q must be 1-65535", clip(addr), clip(ps))
	}
	if ip := net.ParseIP(host); ip == nil && (len(host) > 253 || !dnsName().MatchString(host)) {
		return "", 0, fmt.Errorf("%q: host %q is neither an IP address nor a DNS name", clip(addr), clip(host))
	}
	return host, port, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
