// Package pki makes the certificates tests and the dev clusters need: a CA
// and certificates it signs, with ECDSA P-256 keys.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA (client-go's, valid ten years from an
// hour ago).
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	c, err := cert.NewSelfSignedCACert(cert.Config{CommonName: name, NotBefore: time.Now().Add(-time.Hour)}, key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: c, Key: key}, nil
}

// CertPEM is the CA's certificate, PEM-encoded.
func (ca *CA) CertPEM() []byte { return EncodeCert(ca.Cert.Raw) }

// Issue signs a certificate for cn with one extended usage, valid as long
// as the CA, for localhost and the loopback addresses.
func (ca *CA) Issue(cn string, usage x509.ExtKeyUsage) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: ca.Cert.NotBefore, NotAfter: ca.Cert.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv6loopback, net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// EncodeCert PEM-encodes a DER certificate.
func EncodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der})
}

// EncodeKey PEM-encodes a private key.
func EncodeKey(key any) ([]byte, error) {
	return keyutil.MarshalPrivateKeyToPEM(key)
}
