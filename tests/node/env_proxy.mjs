// Preload (node --import / NODE_OPTIONS=--import) that makes Node's global fetch honour HTTPS_PROXY,
// HTTP_PROXY and NO_PROXY: Node 20's bundled undici ignores them (Node >= 22.21 / 24 has
// NODE_USE_ENV_PROXY=1 instead). Needs the npm `undici` package resolvable from where this file is
// (tests/npm_tools.npm_packages installs it; the test copies this file next to its node_modules).
// The MITM's CA comes from NODE_EXTRA_CA_CERTS, which undici's TLS honours.
import { EnvHttpProxyAgent, setGlobalDispatcher } from 'undici';

setGlobalDispatcher(new EnvHttpProxyAgent());
