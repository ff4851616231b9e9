// oauth-issuer.mjs - the authorization server of protocol.sh's OAuth run:
// test/integration/lib/issuer.mjs (oidc-provider) on a free loopback port.
// Prints "issuer <url>" then "token <jwt>" (a client-credentials access
// token holding sextant:read for the resource given as the argument) and
// serves until SIGTERM, so that Sextant can fetch its keys.
import { startIssuer } from '../test/integration/lib/issuer.mjs';

const resource = process.argv[2];
if (!resource) {
	console.error('usage: oauth-issuer.mjs <resource URL>');
	process.exit(2);
}
const as = await startIssuer({ clients: { bench: 'sextant:read' }, resources: [resource] });
console.log(`issuer ${as.issuer}`);
console.log(`token ${await as.token('bench', 'sextant:read')}`);
process.on('SIGTERM', () => as.close().then(() => process.exit(0)));
