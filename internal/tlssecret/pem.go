package tlssecret

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"strings"
)

const pemCertificate = "CERTIFICATE"

// splitPEM returns the first PEM block's bytes (nil when there is no PEM at
// all) and the bytes of every later CERTIFICATE block.
func splitPEM(data []byte) (first []byte, rest [][]byte) {
	block, data := pem.Decode(data)
	if block == nil {
		return nil, nil
	}
	first = block.Bytes
	for {
		block, data = pem.Decode(data)
		if block == nil {
			return first, rest
		}
		if block.Type == pemCertificate {
			rest = append(rest, block.Bytes)
		}
	}
}

// parseCertificates returns every CERTIFICATE block that parses, skipping
// the rest: a bundle is usable as long as something in it is a certificate.
func parseCertificates(data []byte) []*x509.Certificate {
	var ders [][]byte
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type == pemCertificate {
			ders = append(ders, block.Bytes)
		}
	}
	return parseDER(ders)
}

func parseDER(ders [][]byte) []*x509.Certificate {
	var certs []*x509.Certificate
	for _, der := range ders {
		if c, err := x509.ParseCertificate(der); err == nil {
			certs = append(certs, c)
		}
	}
	return certs
}

// keyMatches reports whether keyPEM holds the private key for cert's public
// key. It reads the first private key block, skipping blocks such as the
// "EC PARAMETERS" that openssl writes before an EC key. Encrypted or
// unparseable keys do not match: a node could not load them either.
func keyMatches(cert *x509.Certificate, keyPEM []byte) bool {
	for {
		var block *pem.Block
		block, keyPEM = pem.Decode(keyPEM)
		if block == nil {
			return false
		}
		if !strings.HasSuffix(block.Type, "PRIVATE KEY") {
			continue
		}
		key := parsePrivateKey(block.Bytes)
		if key == nil {
			return false
		}
		pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
		return ok && pub.Equal(cert.PublicKey)
	}
}

// parsePrivateKey accepts PKCS#8 (RSA, ECDSA, Ed25519), PKCS#1 (RSA) and
// SEC1 (ECDSA), whatever the PEM type says, the way crypto/tls does.
func parsePrivateKey(der []byte) crypto.Signer {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s
		}
		return nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k
	}
	return nil
}
