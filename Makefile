# informerdb. Two commands matter to a newcomer: `make demo` and `make test`.
GO        ?= go
PKGS      ?= ./...
GOLANGCI  ?= github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
BENCHSTAT ?= golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
BENCH     ?= .
BENCHTIME ?= 1s
COUNT     ?= 6
CYCLES    ?= 100

.PHONY: all build demo test test-short test-race vet lint bench crash damage fuzz clean k8s-bin generate generate-check

all: build

build:
	$(GO) build $(PKGS)

## demo: a controller restart on a real kube-apiserver (loopback; binaries built by k8s-bin): 20,000 ConfigMaps,
## cold start, 1% changed while stopped, restart on the same bolt store, client-go's cold start as the reference.
## DEMOFLAGS passes flags: -n 50000, -backend badger, -kubeconfig ~/.kube/config (read-only). See cmd/demo.
demo: k8s-bin
	$(GO) run ./cmd/demo $(DEMOFLAGS)

## test: every test, with the race detector; what CI runs.
test: vet generate-check k8s-bin
	$(GO) test -race -count=1 -timeout 45m $(PKGS)

## k8s-bin: kube-apiserver and etcd for the real API server tests (test/apiserver), built from Go modules
## (module test/k8s: k8s.io/kubernetes v1.36.3, go.etcd.io/etcd/server/v3 v3.6.16) into the git-ignored test/bin.
## Cold build, measured on 2 shared cores: ~400 CPU-seconds, 2.3 GB peak RSS. 4m18s wall with the module cache
## warm; 10m06s wall fully cold (empty GOCACHE and GOMODCACHE, nice 19 under load average 5-13), of which the
## module download took 6s. Incremental: with the build cache warm, `make k8s-bin` takes ~7s (mostly linking).
k8s-bin:
	$(GO) build -C test/k8s -buildvcs=false -o $(CURDIR)/test/bin/ ./cmd/...

## generate: the sample custom resource's deep copies, clientset, listers and informers (test/sample), written by
## k8s.io/code-generator at the version module test/sample/tools pins (it matches client-go's), built into .cache/bin.
SAMPLE     := github.com/informerdb/informerdb/test/sample
SAMPLE_GEN := $(CURDIR)/.cache/bin
generate:
	$(GO) build -C test/sample/tools -o $(SAMPLE_GEN)/ k8s.io/code-generator/cmd/deepcopy-gen \
	  k8s.io/code-generator/cmd/client-gen k8s.io/code-generator/cmd/lister-gen k8s.io/code-generator/cmd/informer-gen
	rm -rf test/sample/generated test/sample/apis/sample/v1alpha1/zz_generated.deepcopy.go
	$(SAMPLE_GEN)/deepcopy-gen --go-header-file test/sample/boilerplate.go.txt \
	  --output-file zz_generated.deepcopy.go $(SAMPLE)/apis/sample/v1alpha1
	$(SAMPLE_GEN)/client-gen --go-header-file test/sample/boilerplate.go.txt --fake-clientset=false \
	  --clientset-name versioned --input-base $(SAMPLE)/apis --input sample/v1alpha1 \
	  --output-dir test/sample/generated/clientset --output-pkg $(SAMPLE)/generated/clientset
	$(SAMPLE_GEN)/lister-gen --go-header-file test/sample/boilerplate.go.txt \
	  --output-dir test/sample/generated/listers --output-pkg $(SAMPLE)/generated/listers $(SAMPLE)/apis/sample/v1alpha1
	$(SAMPLE_GEN)/informer-gen --go-header-file test/sample/boilerplate.go.txt \
	  --versioned-clientset-package $(SAMPLE)/generated/clientset/versioned --listers-package $(SAMPLE)/generated/listers \
	  --output-dir test/sample/generated/informers --output-pkg $(SAMPLE)/generated/informers $(SAMPLE)/apis/sample/v1alpha1

## generate-check: fails if the generated code of test/sample is not what `make generate` writes from its types (the
## tree is then left regenerated, for review).
generate-check:
	@rm -rf .cache/generate-check && mkdir -p .cache/generate-check && cp -a test/sample .cache/generate-check/before
	@$(MAKE) --no-print-directory generate >/dev/null
	@diff -r -x tools .cache/generate-check/before test/sample || \
	  { echo "test/sample: the generated code was not current; it is now regenerated: review and commit it"; exit 1; }

## test-short: the inner loop (no race detector, no real API server).
test-short:
	$(GO) test -short -count=1 $(PKGS)

## crash: the crash-restart soak (test/crash): CYCLES SIGKILL cycles per persistent backend against a real API
## server (no race detector, so more cycles fit; the timeout allows 10s per cycle per backend).
crash: k8s-bin
	INFORMERDB_CRASH_CYCLES=$(CYCLES) $(GO) test -count=1 -v -timeout $$(( $(CYCLES) * 20 + 600 ))s -run '^TestCrash$$' ./test/crash

## damage: the long damage test (store/damagetest): DAMAGE_TRIALS trials per file kind of every backend, each
## flipping bytes of or truncating one file of a database of DAMAGE_OBJECTS ConfigMaps, then verifying, opening and
## reading it in a child process; prints the table of outcomes. `make test` runs a short profile of it.
DAMAGE_TRIALS  ?= 200
DAMAGE_OBJECTS ?= 2000
damage:
	INFORMERDB_DAMAGE_TRIALS=$(DAMAGE_TRIALS) INFORMERDB_DAMAGE_OBJECTS=$(DAMAGE_OBJECTS) $(GO) test -count=1 -v -timeout 0 -run '^TestDamage$$' ./store/damagetest

## fuzz: every fuzz target (the decoders of what a damaged database or snapshot file holds), FUZZTIME each, one after
## the other. Each new input the fuzzer keeps is minimized for at most FUZZMINTIME: go's default of 60s per input
## held a run at 0 execs/s for most of its time. A failing input is written to the package's testdata/fuzz; commit it
## with the fix, and `go test` (so `make test`) runs it from then on.
FUZZTIME    ?= 60s
FUZZMINTIME ?= 5s
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
	  for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "== $$fn ($$(dirname $$f))"; \
	    $(GO) test -timeout 0 -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) $$(dirname $$f); \
	  done; \
	done

vet:
	$(GO) vet $(PKGS)

lint: vet
	$(GO) run $(GOLANGCI) run $(PKGS)

## bench: everything measured against client-go in the same run. First the harness (test/bench/report): restarts of
## BENCH_N ConfigMaps on a real kube-apiserver (informerdb resume on bolt vs client-go's cold start; 100000 adds
## several minutes, mostly creating the ConfigMaps, so the default stops at 50000;
## BENCH_N=10000,50000,100000 for the full table) and heap/RSS of every backend holding BENCH_MEM_N ConfigMaps, each in a
## fresh process; it rewrites the tables of BENCHMARKS.md and docs/bench/*.svg. Then the Go benchmarks of
## BENCH_PKGS (pipeline events/s per backend; Get/ByIndex/List per backend), results in bench.txt, compared by
## benchstat per implementation.
BENCH_N     ?= 10000,50000
BENCH_MEM_N ?= 100000
BENCH_PKGS  ?= ./test/bench ./informer ./store/storetest ./store/bolt ./store/badger
bench: k8s-bin
	$(GO) run ./test/bench/report -n '$(BENCH_N)' -mem-n $(BENCH_MEM_N)
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -count $(COUNT) $(BENCH_PKGS) | tee bench.txt
	$(GO) run $(BENCHSTAT) -col /impl bench.txt

clean:
	rm -rf bench.txt .cache
