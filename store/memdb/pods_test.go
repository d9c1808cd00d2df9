package memdb_test

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// newPod returns a small Pod with labels given as "k=v".
func newPod(ns, name, rv string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	if len(labels) > 0 {
		p.Labels = map[string]string{}
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			p.Labels[k] = v
		}
	}
	return p
}

// realisticPod returns a deterministic Pod of 2-4 KiB in protobuf, shaped like
// a Deployment's Pod: labels, an owner, annotations, two containers with
// env, resources, probes and volume mounts, and a status with conditions.
// i picks the name, namespace (one of 20), node and sizes.
func realisticPod(i int) *corev1.Pod {
	ns := fmt.Sprintf("team-%02d", i%20)
	app := fmt.Sprintf("app-%03d", i%150)
	name := fmt.Sprintf("%s-7d9c8b6f5-%05d", app, i)
	env := make([]corev1.EnvVar, 9+i%8)
	for j := range env {
		env[j] = corev1.EnvVar{Name: fmt.Sprintf("CONFIG_VALUE_%02d", j), Value: fmt.Sprintf("value-%d-%s", j, strings.Repeat("x", 24+(i+j)%30))}
	}
	container := func(n string) corev1.Container {
		return corev1.Container{
			Name:  n,
			Image: fmt.Sprintf("registry.example.com/%s/%s:v1.%d.%d", ns, n, i%7, i%13),
			Args:  []string{"--port=8080", "--log-level=info", fmt.Sprintf("--shard=%d", i%16)},
			Env:   env,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/config"}, {Name: "token", MountPath: "/var/run/secrets/tokens", ReadOnly: true}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}},
				PeriodSeconds: 10},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       ns,
			UID:             types.UID(fmt.Sprintf("4f1c2a9e-0000-4000-8000-%012d", i)),
			ResourceVersion: fmt.Sprint(1000 + i),
			Labels:          map[string]string{"app": app, "pod-template-hash": "7d9c8b6f5", "tier": []string{"front", "back", "batch"}[i%3]},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z", "checksum/config": strings.Repeat("ab12", 16)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9c8b6f5",
				UID: types.UID(fmt.Sprintf("9a8b7c6d-0000-4000-8000-%012d", i%150)), Controller: ptrTrue()}},
		},
		Spec: corev1.PodSpec{
			NodeName:           fmt.Sprintf("node-%03d", i%100),
			ServiceAccountName: app,
			Containers:         []corev1.Container{container("main"), container("sidecar")},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}}},
		},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIP:  fmt.Sprintf("10.%d.%d.%d", i/65536%256, i/256%256, i%256),
			HostIP: fmt.Sprintf("192.168.%d.%d", i%100/256, i%100),
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			},
		},
	}
}

func ptrTrue() *bool { b := true; return &b }
