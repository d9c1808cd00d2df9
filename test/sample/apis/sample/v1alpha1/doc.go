// +k8s:deepcopy-gen=package
// +groupName=sample.informerdb.io

// Package v1alpha1 is version v1alpha1 of the sample.informerdb.io API
// group: the Site custom resource.
package v1alpha1
