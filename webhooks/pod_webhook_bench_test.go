package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/decide"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// deploymentPod is a pod as a ReplicaSet creates it and the API server sends
// it to the webhook: generated name, owner, managed fields, the
// ServiceAccount token volume, default tolerations.
func deploymentPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "web-7d9c8b6f4d-",
			Namespace:    "shop",
			Labels:       map[string]string{"app": "web", "pod-template-hash": "7d9c8b6f4d", "tier": "frontend"},
			Annotations:  map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-20T10:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9c8b6f4d",
				UID: "0c7a1d2e-3f4b-4c5d-8e9f-0a1b2c3d4e5f", Controller: new(true), BlockOwnerDeletion: new(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{".":{},` +
					`"f:kubectl.kubernetes.io/restartedAt":{}},"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},` +
					`"f:ownerReferences":{".":{},"k:{\"uid\":\"0c7a1d2e-3f4b-4c5d-8e9f-0a1b2c3d4e5f\"}":{}}},"f:spec":{"f:containers":{` +
					`"k:{\"name\":\"web\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"MODE\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},` +
					`"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},` +
					`"f:containerPort":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:memory":{}},"f:requests":{".":{},` +
					`"f:cpu":{},"f:memory":{}}}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:terminationGracePeriodSeconds":{}}}`)}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example.com/shop/web:2.14.1", ImagePullPolicy: corev1.PullIfNotPresent,
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "MODE", Value: "production"}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				VolumeMounts:             []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: ptr.To[int32](420),
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
						FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				},
			}}}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			SchedulerName:                 "default-scheduler",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
			Priority:           ptr.To[int32](0),
			EnableServiceLinks: new(true),
			PreemptionPolicy:   ptr.To(corev1.PreemptLowerPriority),
		},
	}
}

// admissionReviewBody is the request body the API server sends for a pod
// creation.
func admissionReviewBody(tb testing.TB, pod *corev1.Pod) []byte {
	tb.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		tb.Fatal(err)
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("4b9e3f0c-1d2a-4e5f-9a8b-7c6d5e4f3a2b"),
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: pod.Namespace, Operation: admissionv1.Create,
			UserInfo: authenticationUser(),
			Object:   runtime.RawExtension{Raw: raw},
			DryRun:   new(false),
			Options:  runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// BenchmarkPodInjector_Handle measures the pod webhook as the API server
// calls it (HTTP request in, AdmissionReview response out), for a pod one
// SidecarSet selects among 1 and 1000.
func BenchmarkPodInjector_Handle(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("sidecarsets=%d", n), func(b *testing.B) {
			sets := make([]*appsv1beta1.SidecarSet, n)
			for i := range n {
				s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%04d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))}}
				app := fmt.Sprintf("other-%04d", i)
				if i == 0 {
					app = "web"
				}
				s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
				s.Spec.Containers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "log-agent", Image: "agent:1.0",
					VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/logs"}}}}}
				s.Spec.Volumes = []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				sets[i] = s
			}
			registry, err := candidate.New(sets...)
			if err != nil {
				b.Fatal(err)
			}
			handler := &PodInjector{Injector: decide.Injector{Registry: registry, Namespace: "kruise-system"}}
			body := admissionReviewBody(b, deploymentPod())
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, names.PodInjectionPath, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"patch"`)) {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
			}
		})
	}
}

func authenticationUser() authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller",
		UID: "7f8e9d0c-1b2a-3c4d-5e6f-7a8b9c0d1e2f", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
}
