package doctor

import (
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestCSRSettled(t *testing.T) {
	cond := func(t certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue}
	}
	for _, tc := range []struct {
		name       string
		conditions []certificatesv1.RequestConditionType
		cert       bool
		want       bool
	}{
		{name: "pending", want: false},
		{name: "approved and signed", conditions: []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved}, cert: true, want: true},
		// What EKS leaves behind for names it cannot verify: the kubelet still has no certificate.
		{name: "approved, never signed", conditions: []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved}, want: false},
		{name: "denied", conditions: []certificatesv1.RequestConditionType{certificatesv1.CertificateDenied}, want: true},
		{name: "approved then failed", conditions: []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateFailed}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &certificatesv1.CertificateSigningRequest{}
			for _, ct := range tc.conditions {
				c.Status.Conditions = append(c.Status.Conditions, cond(ct))
			}
			if tc.cert {
				c.Status.Certificate = []byte("-----BEGIN CERTIFICATE-----")
			}
			if got := csrSettled(c); got != tc.want {
				t.Fatalf("csrSettled = %v, want %v", got, tc.want)
			}
		})
	}
}
