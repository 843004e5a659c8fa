// Command bundlevalidate checks the OLM bundle (bundle/ and
// bundle.Dockerfile) with the rules of hack/bundle/validate: errors fail,
// warnings print. With --apiserver (the default) it also installs the CRDs
// into a throwaway kube-apiserver built into bin/k8s and creates the
// alm-examples there in dry-run. Run it through `make bundle-validate`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/apiserver"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/validate"
)

func main() {
	dir := flag.String("bundle", "bundle", "The bundle directory.")
	dockerfile := flag.String("dockerfile", "bundle.Dockerfile", "The bundle's Dockerfile (empty: none).")
	useAPIServer := flag.Bool("apiserver", true, "Also install the CRDs into a real kube-apiserver (envtest).")
	assets := flag.String("assets", envOr("KUBEBUILDER_ASSETS", filepath.Join("bin", "k8s")), "The directory of the kube-apiserver and etcd binaries.")
	rules := flag.Bool("rules", false, "List the rules and exit.")
	flag.Parse()
	if *rules {
		fmt.Printf("%-38s %s\n", validate.RuleParse, "Every manifest parses as a Kubernetes object; the CSV decodes strictly (checked while loading).")
		for _, r := range validate.Rules() {
			fmt.Printf("%-38s %s\n", r.Name, r.Doc)
		}
		fmt.Printf("%-38s %s\n", validate.RuleCRDAPIServer, "Every CRD installs into a real kube-apiserver and becomes established (--apiserver).")
		fmt.Printf("%-38s %s\n", validate.RuleExamplesAPI, "Every alm-example is accepted by that API server in dry-run (--apiserver).")
		return
	}
	errs, err := run(*dir, *dockerfile, *useAPIServer, *assets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundlevalidate:", err)
		os.Exit(2)
	}
	if errs > 0 {
		fmt.Fprintf(os.Stderr, "bundlevalidate: %s: %d error(s)\n", *dir, errs)
		os.Exit(1)
	}
}

func run(dir, dockerfile string, useAPIServer bool, assets string) (int, error) {
	var df []byte
	if dockerfile != "" {
		var err error
		if df, err = os.ReadFile(dockerfile); err != nil {
			return 0, err
		}
	}
	b, err := validate.Load(os.DirFS(dir), df)
	if err != nil {
		return 0, err
	}
	findings := validate.Validate(b)
	if useAPIServer {
		server, err := apiserver.Start(assets)
		if err != nil {
			return 0, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		findings = append(findings, validate.CheckOnAPIServer(ctx, b, server)...)
		cancel()
		if err := server.Stop(); err != nil {
			return 0, errors.Join(errors.New("stopping the API server"), err)
		}
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	errs := len(validate.Errors(findings))
	fmt.Printf("%s: %d error(s), %d warning(s)\n", dir, errs, len(findings)-errs)
	return errs, nil
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
