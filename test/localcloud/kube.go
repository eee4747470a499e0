package localcloud

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodewright/nodewright/test/localcloud/pki"
)

// writeKubeconfig writes an admin kubeconfig for the cluster.
func writeKubeconfig(path string, cl Cluster, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cl.Name] = &clientcmdapi.Cluster{Server: cl.Endpoint, CertificateAuthorityData: cl.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[cl.Name] = &clientcmdapi.Context{Cluster: cl.Name, AuthInfo: "admin"}
	cfg.CurrentContext = cl.Name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

func (c *Cloud) kubeClient(_ *pki.Files) error {
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = 200, 400
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kube client: %w", err)
	}
	c.REST, c.Kube = rc, kc
	return nil
}

// waitDefaultServiceAccount waits until the controller manager has made the
// default ServiceAccount, without which no pod of the namespace is admitted.
// A controller manager slow to start on a loaded machine (a CI run saw it
// make none in 60 s) is not waited for past saGrace: the ServiceAccount,
// an empty object, is created here then (AlreadyExists if it won the race).
func (c *Cloud) waitDefaultServiceAccount(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.Options.ReadyTimeout)
	defer cancel()
	start := time.Now()
	for {
		_, err := c.Kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if apierrors.IsNotFound(err) && time.Since(start) > saGrace {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default"}}
			if _, cerr := c.Kube.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); cerr != nil && !apierrors.IsAlreadyExists(cerr) {
				c.log.Warn("create the default service account", "err", cerr)
			}
		}
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			c.log.Warn("waiting for default service account", "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("default service account: %w (last: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// saGrace is how long the controller manager is given to make the default
// ServiceAccount before the local cloud makes it.
const saGrace = 15 * time.Second
