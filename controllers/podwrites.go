package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// PodWritesConfig is the REST configuration of the pod writes
// (SidecarSetReconciler.Pods): the core/v1 group, answers asked for in
// protobuf, the cheapest for the API server to encode, for the rare answer
// read (an error's Status).
func PodWritesConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &schema.GroupVersion{Version: "v1"}
	cfg.APIPath = "/api"
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return cfg
}

// patchPod sends a strategic merge patch to a pod or one of its
// subresources (status, resize) and reads the answer only when it is an
// error: a rollout patches every pod it upgrades, and decoding each pod the
// API server returns (which the cache then receives again by the watch)
// was a tenth of the manager's CPU in a rollout.
func (r *SidecarSetReconciler) patchPod(ctx context.Context, pod types.NamespacedName, subresource string, patch []byte) error {
	req := r.Pods.Patch(types.StrategicMergePatchType).Namespace(pod.Namespace).Resource("pods").Name(pod.Name)
	if subresource != "" {
		req = req.SubResource(subresource)
	}
	return req.Body(patch).Do(ctx).Error()
}
