package framework

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// RunSuite runs a package's ginkgo specs with the suite's Eventually
// timeout and polling interval, enforced for waits given a spec context
// too (spec contexts have no deadline).
func RunSuite(t *testing.T, name string, timeout, poll time.Duration) {
	t.Helper()
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(timeout)
	gomega.SetDefaultEventuallyPollingInterval(poll)
	gomega.EnforceDefaultTimeoutsWhenUsingContexts()
	ginkgo.RunSpecs(t, name)
}

// StartOperator is the usual BeforeSuite: the control plane with the
// webhook configurations, the operator's namespace and the given objects in
// it (a whitelist ConfigMap), then the operator (logging to the ginkgo
// writer), running until StopManager. Its manager outlives the setup node's
// context.
func StartOperator(ctx context.Context, objs ...client.Object) (*Env, error) {
	ctrl.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
	env, err := Start(Options{Webhooks: true})
	if err != nil {
		return nil, err
	}
	objs = append([]client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}}}, objs...)
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			return nil, errors.Join(err, env.Stop())
		}
	}
	if err := env.StartManager(context.WithoutCancel(ctx), ManagerOptions{}); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return env, nil
}
