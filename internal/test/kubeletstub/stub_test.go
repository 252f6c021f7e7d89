package kubeletstub

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func clientCert(t *testing.T, cn string) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestStubInNamespace(t *testing.T) {
	ns, err := New()
	if err != nil {
		t.Fatalf("cannot create the network namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := ns.Close(); err != nil {
			t.Error(err)
		}
		if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), ns.Name) {
			t.Errorf("namespace %s still exists", ns.Name)
		}
	})
	srv, err := Start(ns, 3, func(i int) []byte {
		b, _ := ConfigzBody(map[string]any{"maxPods": 10 + i})
		return b
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// The listeners live in the namespace: nothing listens on the host's own side of the pair.
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(ns.HostIP, strconv.Itoa(srv.Endpoints()[0].Port)), time.Second); err == nil {
		c.Close()
		t.Fatal("a listener is reachable on the host address")
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, Certificates: []tls.Certificate{clientCert(t, "kube-apiserver-kubelet-client")}}}}
	for i, e := range srv.Endpoints() {
		resp, err := hc.Get("https://" + net.JoinHostPort(ns.NSIP, strconv.Itoa(e.Port)) + "/configz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := `{"kubeletconfig":{"maxPods":` + strconv.Itoa(10+i) + `}}`; string(body) != want {
			t.Fatalf("endpoint %d: %s, want %s", i, body, want)
		}
		if e.Hits() != 1 || e.Clients()["kube-apiserver-kubelet-client"] != 1 {
			t.Fatalf("endpoint %d: hits %d clients %v", i, e.Hits(), e.Clients())
		}
	}
	srv.Endpoints()[1].SetStatus(http.StatusServiceUnavailable)
	resp, err := hc.Get("https://" + net.JoinHostPort(ns.NSIP, strconv.Itoa(srv.Endpoints()[1].Port)) + "/configz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	// Without a client certificate the stub refuses, like a kubelet.
	noCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if resp, err := noCert.Get("https://" + net.JoinHostPort(ns.NSIP, strconv.Itoa(srv.Endpoints()[0].Port)) + "/configz"); err == nil {
		resp.Body.Close()
		t.Fatal("request without a client certificate was served")
	}
	if srv.TotalHits() != 4 {
		t.Fatalf("total hits %d", srv.TotalHits())
	}
}
