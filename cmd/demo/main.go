// Command demo shows what informerdb changes for a controller restart. With
// no flags it starts a real kube-apiserver and etcd on loopback (built by
// `make k8s-bin`), creates 20,000 ConfigMaps, runs an example controller (an
// informer on a bolt store, a lister, a workqueue) from a cold start, stops
// it, changes 1% of the objects, restarts it on the same database, and
// prints cold start vs restart, with client-go's SharedIndexInformer cold
// start as the reference.
//
//	go run ./cmd/demo [-n 20000] [-backend bolt|badger|memdb-file|memory-file] [-kubeconfig path] [-cpuprofile file]
//	                  [-quiet] [-state] [-shape factory|crcache]
//
// -shape runs several informers that start together, -n objects each: five
// of one informer.Factory, or a controller-runtime cache of two namespaces;
// -state restarts with informer.Options.StateCatchUp.
//
// With -kubeconfig it runs against that cluster instead, read-only: it only
// lists and watches ConfigMaps in all namespaces.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/test/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// liveNote says what a live-cluster run (the default) measures.
const liveNote = "live cluster: a lease renewed every second throughout, the restart 3s after the last change"

// run is the whole command, testable in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 20000, "number of ConfigMaps to create (ignored with -kubeconfig)")
	backend := fs.String("backend", "bolt", fmt.Sprintf("persistent backend, one of %v, optionally with URL parameters (bolt?cache=1000)", bench.Backends))
	kubeconfig := fs.String("kubeconfig", "", "run read-only against this cluster instead of a loopback API server")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	shape := fs.String("shape", "", fmt.Sprintf("several informers starting together, -n objects each, instead of one: one of %v", bench.Shapes))
	state := fs.Bool("state", false, "the restart lists every object's metadata (informer.Options.StateCatchUp) rather than wait for a bookmark")
	quiet := fs.Bool("quiet", false, "no lease renewed every second and no pause before the restart: the fast path of a restart right after its own writes, which a live cluster rarely gives")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *n <= 0 {
		return fmt.Errorf("-n %d: want a positive number of ConfigMaps", *n)
	}
	if _, err := bench.StoreURL(*backend, "/"); err != nil {
		return err
	}
	switch {
	case *shape != "" && !slices.Contains(bench.Shapes, *shape):
		return fmt.Errorf("-shape %q: unknown (want one of %v)", *shape, bench.Shapes)
	case *shape != "" && *kubeconfig != "":
		return fmt.Errorf("-shape %q creates objects: not with -kubeconfig, which is read-only", *shape)
	case *state && *shape == bench.ShapeFactory:
		return fmt.Errorf("-state is measured with -shape %s or one informer, not with -shape %s", bench.ShapeCRCache, bench.ShapeFactory)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// The informers' and client-go's logs would bury the table.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)

	var cl *bench.Cluster
	var err error
	if *kubeconfig != "" {
		fmt.Fprintf(stdout, "connecting to the cluster of %s (read-only: lists and watches ConfigMaps, changes nothing)\n", *kubeconfig)
		cl, err = bench.KubeconfigCluster(*kubeconfig)
	} else {
		fmt.Fprintln(stdout, "starting etcd and kube-apiserver on 127.0.0.1...")
		began := time.Now()
		cl, err = bench.LaunchCluster(ctx)
		if err == nil {
			fmt.Fprintf(stdout, "kube-apiserver ready at %s in %v\n", cl.Host(), time.Since(began).Round(time.Millisecond))
		}
	}
	if err != nil {
		return err
	}
	defer cl.Close()

	if *shape != "" {
		res, err := bench.RunMany(ctx, cl, bench.ManyConfig{Shape: *shape, N: *n, Backend: *backend, Quiet: *quiet, StateCatchUp: *state, Log: stdout})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n%d informers (%s) of %d objects each; while stopped, each had %d updated, %d deleted, %d created\n",
			res.Informers, res.Shape, res.N, res.Changes.Updated, res.Changes.Deleted, res.Changes.Created)
		if res.Live {
			fmt.Fprintln(stdout, liveNote)
		}
		fmt.Fprintln(stdout)
		return res.WriteTable(stdout)
	}
	res, err := bench.Run(ctx, cl, bench.Config{N: *n, Backend: *backend, Quiet: *quiet, StateCatchUp: *state, Log: stdout})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	if res.ReadOnly {
		fmt.Fprintf(stdout, "%d ConfigMaps in the cluster; store %s\n\n", res.N, res.URL)
	} else {
		fmt.Fprintf(stdout, "%d ConfigMaps of ~1 KiB; store %s\nwhile stopped: %d updated, %d deleted, %d created\n",
			res.N, res.URL, res.Changes.Updated, res.Changes.Deleted, res.Changes.Created)
		if res.Live {
			fmt.Fprintln(stdout, liveNote)
		} else {
			fmt.Fprintln(stdout, "quiet cluster (-quiet): the restart comes right after its own writes, a fast path")
		}
		fmt.Fprintln(stdout)
	}
	if err := res.WriteTable(stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nThe restart replays the persisted objects to the handler, asks the API server for one")
	fmt.Fprintln(stdout, "object (the freshness probe), and watches from where it stopped: only the changes travel.")
	return nil
}
