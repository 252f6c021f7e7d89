package aws_test

import (
	"context"
	"errors"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// TestListingsEnd (issue 31 item 7): an endpoint that answers every page with a fresh NextToken
// (the SDK's paginators stop on an empty or repeated one only) is followed for MaxPages pages,
// then the listing fails saying so, instead of looping for ever.
func TestListingsEnd(t *testing.T) {
	cloud := awsfake.New()
	cloud.EndlessPages = true
	ctx := context.Background()
	insts, err := nkaws.DescribeInstances(ctx, cloud, &ec2.DescribeInstancesInput{})
	var pe *nkaws.PagesError
	if !errors.As(err, &pe) || pe.Pages != nkaws.MaxPages || len(insts) != nkaws.MaxPages {
		t.Fatalf("DescribeInstances: %d instances, error %v; want %d and a PagesError", len(insts), err, nkaws.MaxPages)
	}
	if !strings.Contains(err.Error(), "ec2:DescribeInstances: stopped after 1000 pages") {
		t.Errorf("error %q does not say which listing stopped, and why", err)
	}
	if _, err := nkaws.DescribeSubnets(ctx, cloud, &ec2.DescribeSubnetsInput{}); !errors.As(err, &pe) {
		t.Errorf("DescribeSubnets: error %v, want a PagesError", err)
	}
}

// TestLoadDeadline (issue 31 item 7): LoadOptions.Timeout is one deadline for every call of the
// clients, retries included: an EC2 that never answers fails the call once it passes, with an
// error that says so.
func TestLoadDeadline(t *testing.T) {
	isolateAWSEnv(t, "eu-test-1")
	var requests atomic.Int64
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select { // never answers
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // first: the handlers return, then the server closes
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	c, err := allclients.Load(context.Background(), nkaws.LoadOptions{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The test's own bound only ends a test that already failed (a call that never returns).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = nkaws.DescribeInstances(ctx, c.EC2, &ec2.DescribeInstancesInput{})
	var de *nkaws.DeadlineError
	if !errors.As(err, &de) || ctx.Err() != nil {
		t.Fatalf("error %v, want the deadline's (test context: %v)", err, ctx.Err())
	}
	if !strings.Contains(err.Error(), "the AWS calls of this run passed their deadline (500ms in all)") {
		t.Errorf("error %q does not name the deadline", err)
	}
	if requests.Load() == 0 {
		t.Error("no request reached the server")
	}
}
