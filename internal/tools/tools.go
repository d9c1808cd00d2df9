//go:build tools

// Package tools pins dependencies that packages adopt over time, so parallel work does not race on go.mod.
package tools

import (
	_ "github.com/dgraph-io/badger/v4"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/hashicorp/go-memdb"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/bbolt"
	_ "go.uber.org/goleak"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/client-go/dynamic"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/metadata"
	_ "k8s.io/client-go/tools/cache"
	_ "k8s.io/klog/v2"
	_ "k8s.io/utils/clock/testing"
	_ "k8s.io/utils/lru"
	_ "sigs.k8s.io/controller-runtime/pkg/cache"
)
