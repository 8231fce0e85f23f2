// SPDX-License-Identifier: Apache-2.0

// Package kubeclient builds the API client configuration every liken
// program uses: the pod's service account in a cluster, or a kubeconfig
// file for a person running a program by hand and for tests against the
// local control plane. It does not import the clientset
// (k8s.io/client-go/kubernetes), whose scheme registers every API group at
// start-up, so a small program that talks to one API (the capture
// container's TokenReviews) stays small.
package kubeclient

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigEnv names the kubeconfig file when no path is passed.
const KubeconfigEnv = "KUBECONFIG"

// Config returns a REST config from kubeconfig (a file path), else from
// $KUBECONFIG, else from the pod's service account (in-cluster). userAgent
// names the program in the API server's logs. Errors name the source that
// failed.
func Config(kubeconfig, userAgent string) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv(KubeconfigEnv)
	}
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
	} else {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config (no %s set): %w", KubeconfigEnv, err)
		}
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}

// CheckKubeconfigFiles returns an error when $KUBECONFIG names files and
// none of them exists, for a kubectl plugin whose connection flags come
// from k8s.io/cli-runtime. clientcmd's loading rules skip a missing file
// named by $KUBECONFIG without a word (only --kubeconfig must exist), so
// a mistyped path would otherwise end in an unconfigured client dialling
// localhost:8080. access is the loader's ConfigAccess
// (ConfigFlags.ToRawKubeConfigLoader().ConfigAccess()); an explicit
// --kubeconfig is left to clientcmd, which already refuses a missing one.
func CheckKubeconfigFiles(access clientcmd.ConfigAccess) error {
	if access.IsExplicitFile() || os.Getenv(KubeconfigEnv) == "" {
		return nil
	}
	paths := access.GetLoadingPrecedence()
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	if len(paths) == 1 {
		return fmt.Errorf("%s names %s, which does not exist", KubeconfigEnv, paths[0])
	}
	return fmt.Errorf("%s names %d files and none of them exists (%s)", KubeconfigEnv, len(paths), strings.Join(paths, string(os.PathListSeparator)))
}
