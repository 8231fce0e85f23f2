// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// NewSecretLister returns a SecretLister of the Secrets in namespace,
// reached with rc: a REST client of core/v1 whose scheme knows the core/v1
// types alone. It asks for protobuf, as client-go's typed clients do for
// built-in types, and accepts JSON. The clientset (k8s.io/client-go/kubernetes)
// would serve the same requests, but its scheme registers every API group
// when the program starts, which costs bondfetch, a program that makes one
// kind of request, most of its memory. Errors: rc cannot make a client.
func NewSecretLister(rc *rest.Config, namespace string) (SecretLister, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(rc)
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.APIPath = "/api"
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("Secret client: %w", err)
	}
	return &restSecrets{client: client, namespace: namespace, params: runtime.NewParameterCodec(scheme)}, nil
}

// restSecrets lists Secrets over a core/v1 REST client.
type restSecrets struct {
	client    *rest.RESTClient
	namespace string
	params    runtime.ParameterCodec
}

// List implements SecretLister: GET /api/v1/namespaces/<namespace>/secrets
// with opts as the query.
func (s *restSecrets) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	out := &corev1.SecretList{}
	err := s.client.Get().Namespace(s.namespace).Resource("secrets").
		VersionedParams(&opts, s.params).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}
