package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Site asks for a Deployment of a web server with a number of replicas,
// as sample-controller's Foo does.
type Site struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SiteSpec   `json:"spec"`
	Status SiteStatus `json:"status,omitempty"`
}

// SiteSpec is the Deployment a Site wants.
type SiteSpec struct {
	// DeploymentName names the Deployment the Site owns, in its namespace.
	DeploymentName string `json:"deploymentName"`
	// Replicas is the Deployment's number of replicas.
	Replicas *int32 `json:"replicas,omitempty"`
}

// SiteStatus is what the controller last saw of the Deployment.
type SiteStatus struct {
	// Replicas is the replicas of the Deployment the controller last
	// reconciled.
	Replicas int32 `json:"replicas"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SiteList is a list of Sites.
type SiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []Site `json:"items"`
}
