// Package sample is a small custom resource, Site, with the clientset,
// listers and informers that k8s.io/code-generator writes for it (make
// generate), as a controller in the style of k8s.io/sample-controller has
// them: the tests of informerdb's typed factories run such generated code
// on informerdb.
//
//   - apis/sample/v1alpha1: the Site type (group sample.informerdb.io), and
//     its generated deep copies.
//   - generated/clientset/versioned: the clientset (client-gen).
//   - generated/listers: the listers (lister-gen).
//   - generated/informers/externalversions: the informer factory
//     (informer-gen).
//
// Everything under generated/ and every zz_generated file is written by
// `make generate` and checked by `make generate-check` (part of `make
// test`): edit the types, then regenerate.
package sample
