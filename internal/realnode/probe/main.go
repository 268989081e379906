// Command probe is the real-node tests' client pod: it checks, from inside
// a pod, what the cluster's network gives it, and prints one line a check:
//
//	ok <check> <result>    or    fail <check> <error>
//
// Checks (each retried until it passes or -timeout ends; DNS records and
// Service rules follow the API by a moment):
//
//	resolve=NAME      the addresses NAME resolves to, through the pod's
//	                  /etc/resolv.conf (search path and ndots included)
//	ping=HOST:PORT    a RESP PING sent there is answered +PONG
//	apiserver=URL     a SelfSubjectReview posted to URL with the pod's
//	                  ServiceAccount token, verified against its CA: the
//	                  user the apiserver authenticated ($VARS expanded)
//
// It exits 1 when a check failed. It is built static (CGO_ENABLED=0), so
// Go's resolver reads /etc/resolv.conf, and an image holding this file
// alone runs.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func main() {
	timeout := flag.Duration("timeout", time.Minute, "how long each check is retried")
	flag.Parse()
	failed := false
	for _, arg := range flag.Args() {
		kind, target, _ := strings.Cut(arg, "=")
		var check func(context.Context, string) (string, error)
		switch kind {
		case "resolve":
			check = resolve
		case "ping":
			check = ping
		case "apiserver":
			check = apiserver
			target = os.ExpandEnv(target)
		default:
			fmt.Printf("fail %s unknown check\n", arg)
			failed = true
			continue
		}
		res, err := retry(*timeout, target, check)
		if err != nil {
			fmt.Printf("fail %s %v\n", arg, err)
			failed = true
			continue
		}
		fmt.Printf("ok %s %s\n", arg, res)
	}
	if failed {
		os.Exit(1)
	}
}

func retry(timeout time.Duration, target string, check func(context.Context, string) (string, error)) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := check(ctx, target)
		cancel()
		if err == nil || time.Now().After(deadline) {
			return res, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func resolve(ctx context.Context, name string) (string, error) {
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	if err != nil {
		return "", err
	}
	sort.Strings(addrs)
	return strings.Join(addrs, ","), nil
}

func ping(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSpace(line)
	if line != "+PONG" {
		return "", fmt.Errorf("answered %q", line)
	}
	return line, nil
}

func apiserver(ctx context.Context, url string) (string, error) {
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return "", err
	}
	ca, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", errors.New("no certificate in ca.crt")
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(url, "/")+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
		return "", err
	}
	if review.Status.UserInfo.Username == "" {
		return "", errors.New("no user in the review")
	}
	return review.Status.UserInfo.Username, nil
}
