// Package crdconversion keeps the SidecarSet CRD's conversion webhook
// pointing at the operator's webhook server, when the manager issues its
// own certificate.
package crdconversion

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/sidecarset-operator/sidecarset-operator/webhooks/crdwatch"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// The manager keeps the SidecarSet CRD's conversion webhook pointing at its
// own webhook server only when it manages its own certificates
// (certs.CertOptions.KeepsConversion). The right it needs for that, get and patch
// on this one CRD, is therefore no marker of the manager's role: it ships
// with the self-managed certificate (config/certs/crd_conversion_rbac.yaml),
// and neither the cert-manager install nor the OLM bundle grants it.

// conversionSyncInterval is how often the CRD's conversion webhook is
// checked once it is right (another installer, such as an OpenKruise
// manager still running, may rewrite it); until then it is checked every
// second.
const conversionSyncInterval = 10 * time.Second

// ConversionConfig keeps the SidecarSet CRD's conversion webhook (the API
// server converts between apps.kruise.io/v1alpha1 and the stored v1beta1
// through it) at the operator's webhook server: the same Service or URL as
// the SidecarSet defaulting webhook of MutatingConfig, with the path
// /convert and the same CA bundle (which the certificate machinery keeps
// current there: self-managed, cert-manager's CA injector, ...). It runs on
// every replica, as the webhook server does; its writes are idempotent.
//
// It is used only with self-managed certificates (certs.CertOptions.KeepsConversion):
// with external ones, whoever issues the certificate also writes the CRD's CA
// bundle (cert-manager's CA injector, from the CRD's
// cert-manager.io/inject-ca-from annotation; OLM, from the CSV's
// ConversionWebhook definition), and the manager has no right on the CRD.
type ConversionConfig struct {
	// Reader reads the CRD and the webhook configuration: uncached (the
	// manager may get the one CRD by name, not list CRDs).
	Reader client.Reader
	// Client patches the CRD.
	Client client.Client
	// MutatingConfig names the MutatingWebhookConfiguration of the
	// SidecarSet defaulting webhook.
	MutatingConfig string
	// Watches follows the SidecarSet informer's watches (nil: not
	// followed): after a write of the CRD, ReadyCheck waits until the watch
	// is reopened on the CRD's new storage.
	Watches *crdwatch.SidecarSetWatches

	synced atomic.Bool // a Sync found or made the CRD right
	ready  atomic.Bool // ReadyCheck passed once
}

// ReadyCheck fails until the CRD's conversion webhook points at this
// operator (before that, the API server refuses every v1alpha1 request of a
// SidecarSet) and, when this manager wrote it, until the SidecarSet watch is
// reopened on the storage the write replaced (crdwatch.SidecarSetWatches). Once it
// passes it stays passed: a later rewrite (by another installer) does not
// take a serving replica out of its Service.
func (c *ConversionConfig) ReadyCheck() healthz.Checker {
	return func(*http.Request) error {
		if c.ready.Load() {
			return nil
		}
		if !c.synced.Load() {
			return fmt.Errorf("the conversion webhook of CustomResourceDefinition %s is not set yet", names.SidecarSetCRDName)
		}
		if c.Watches != nil {
			live, waited := c.Watches.Live(time.Now())
			if !live {
				return fmt.Errorf("the SidecarSet watch is not yet reopened on the storage of CustomResourceDefinition %s (written %s ago)",
					names.SidecarSetCRDName, waited.Round(time.Millisecond))
			}
			if c.ready.CompareAndSwap(false, true) && waited > 0 {
				ctrl.Log.WithName("crd-conversion").Info("The SidecarSet watch was reopened on the CRD's new storage",
					"crd", names.SidecarSetCRDName, "afterWrite", waited.Round(time.Millisecond).String())
			}
		}
		c.ready.Store(true)
		return nil
	}
}

// NeedLeaderElection is false: every replica serves the conversion webhook.
func (c *ConversionConfig) NeedLeaderElection() bool { return false }

// Start syncs every second until the CRD is right, then every
// conversionSyncInterval until it is not, and so on until the context ends.
func (c *ConversionConfig) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("crd-conversion")
	lastErr := ""
	// sync syncs once and reports whether the CRD is right.
	sync := func(ctx context.Context) bool {
		changed, err := c.Sync(ctx)
		switch {
		case err != nil:
			if err.Error() != lastErr {
				log.Info("The SidecarSet CRD's conversion webhook is not set yet", "reason", err.Error())
			}
			lastErr = err.Error()
			return false
		case changed || lastErr != "":
			log.Info("The SidecarSet CRD's conversion webhook points at this operator", "crd", names.SidecarSetCRDName)
			lastErr = ""
		}
		return true
	}
	for first := true; ctx.Err() == nil; first = false {
		_ = wait.PollUntilContextCancel(ctx, time.Second, first, func(ctx context.Context) (bool, error) {
			return sync(ctx), nil
		})
		_ = wait.PollUntilContextCancel(ctx, conversionSyncInterval, false, func(ctx context.Context) (bool, error) {
			return !sync(ctx), nil
		})
	}
	return nil
}

// Sync writes the CRD's conversion webhook if it differs from the one
// DesiredConversion derives from the webhook configuration; changed says
// whether it wrote.
func (c *ConversionConfig) Sync(ctx context.Context) (changed bool, err error) {
	config := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Reader.Get(ctx, types.NamespacedName{Name: c.MutatingConfig}, config); err != nil {
		return false, fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", c.MutatingConfig, err)
	}
	var clientConfig *admissionregistrationv1.WebhookClientConfig
	for i := range config.Webhooks {
		if config.Webhooks[i].Name == names.SidecarSetWebhookName {
			clientConfig = &config.Webhooks[i].ClientConfig
		}
	}
	if clientConfig == nil {
		return false, fmt.Errorf("MutatingWebhookConfiguration %s has no webhook %s", c.MutatingConfig, names.SidecarSetWebhookName)
	}
	if len(clientConfig.CABundle) == 0 {
		return false, fmt.Errorf("webhook %s of MutatingWebhookConfiguration %s has no CA bundle yet", names.SidecarSetWebhookName, c.MutatingConfig)
	}
	want, err := DesiredConversion(*clientConfig)
	if err != nil {
		return false, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Reader.Get(ctx, types.NamespacedName{Name: names.SidecarSetCRDName}, crd); err != nil {
		return false, fmt.Errorf("reading CustomResourceDefinition %s: %w", names.SidecarSetCRDName, err)
	}
	if equality.Semantic.DeepEqual(crd.Spec.Conversion, want) {
		c.synced.Store(true)
		return false, nil
	}
	patch := client.MergeFromWithOptions(crd.DeepCopy(), client.MergeFromWithOptimisticLock{})
	crd.Spec.Conversion = want
	if err := c.Client.Patch(ctx, crd, patch, client.FieldOwner(names.FieldOwner)); err != nil {
		return false, fmt.Errorf("writing the conversion webhook of CustomResourceDefinition %s: %w", names.SidecarSetCRDName, err)
	}
	if c.Watches != nil {
		c.Watches.StorageReplaced(time.Now())
	}
	c.synced.Store(true)
	return true, nil
}

// DesiredConversion is the conversion of the SidecarSet CRD served where an
// admission webhook with the given client configuration is: the same
// Service (namespace, name, port) or the same URL's scheme and host, with
// the path /convert, and the same CA bundle. The API server sends
// ConversionReviews of v1 (or v1beta1, as OpenKruise's CRD lists).
func DesiredConversion(admission admissionregistrationv1.WebhookClientConfig) (*apiextensionsv1.CustomResourceConversion, error) {
	out := apiextensionsv1.WebhookClientConfig{CABundle: admission.CABundle}
	switch {
	case admission.Service != nil:
		port := int32(443) // the API server's default
		if admission.Service.Port != nil {
			port = *admission.Service.Port
		}
		out.Service = &apiextensionsv1.ServiceReference{
			Namespace: admission.Service.Namespace,
			Name:      admission.Service.Name,
			Path:      new(names.ConversionPath),
			Port:      &port,
		}
	case admission.URL != nil:
		u, err := url.Parse(*admission.URL)
		if err != nil {
			return nil, fmt.Errorf("the webhook's URL %q: %w", *admission.URL, err)
		}
		converted := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: names.ConversionPath}).String()
		out.URL = &converted
	default:
		return nil, fmt.Errorf("the webhook has neither a Service nor a URL")
	}
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &out,
			ConversionReviewVersions: []string{"v1", "v1beta1"},
		},
	}, nil
}
