"""Generate the proxy's own CA into a mitmproxy confdir (docs/wire.md#ca).

Files: `mitmproxy-ca.pem` (key + certificate, the only file mitmproxy reads; mode 0600) and
`mitmproxy-ca-cert.pem` (certificate only, what clients trust). Python >= 3.13 clients verify with
VERIFY_X509_STRICT and reject a CA without critical BasicConstraints, critical KeyUsage or a
SubjectKeyIdentifier, so all three are set.
"""

import datetime
import os
from pathlib import Path
from typing import Literal

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from proxy.certs_dir import private_dir

CA_KEY_AND_CERT = "mitmproxy-ca.pem"
CA_CERT = "mitmproxy-ca-cert.pem"
CA_CERT_CER = "mitmproxy-ca-cert.cer"  # same certificate, the name Android and Windows look for
VALIDITY_DAYS = 3650  # mitmproxy's own CAs are valid for 10 years


def generate_ca(confdir: Path, key_type: Literal["rsa", "ec"] = "rsa", common_name: str = "gemini-tool-proxy CA",
                overwrite: bool = False) -> Path:
    """Write a new CA into `confdir`; refuses to replace an existing one unless `overwrite`."""
    private_dir(confdir)
    target = confdir / CA_KEY_AND_CERT
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists; pass overwrite=True (--force) to replace it")
    key = rsa.generate_private_key(65537, 2048) if key_type == "rsa" else ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "gemini-tool-proxy")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=2))  # tolerate clients with a slow clock
        .not_valid_after(now + datetime.timedelta(days=VALIDITY_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    _write_private(target, key_pem + cert_pem)
    (confdir / CA_CERT).write_bytes(cert_pem)
    (confdir / CA_CERT_CER).write_bytes(cert_pem)
    return confdir / CA_CERT


def _write_private(path: Path, data: bytes) -> None:
    """Create the key file readable by its owner only, with no window where it is wider."""
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def ensure_ca(confdir: Path) -> Path:
    """The client certificate path, generating the CA first if there is none (the directory 0700:
    certs_dir.private_dir)."""
    private_dir(confdir)
    if not (confdir / CA_KEY_AND_CERT).exists():
        return generate_ca(confdir)
    return confdir / CA_CERT
