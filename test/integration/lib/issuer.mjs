// issuer.mjs - a real OAuth 2.1 authorization server for tests and
// benchmarks: oidc-provider (pinned in package.json) on a free loopback
// port, with resource indicators (RFC 8707) issuing JWT access tokens
// (at+jwt, RS256) for the given resources, client credentials for the
// named clients (secret "<id>-secret"), dynamic client registration, and
// the consent step automated (alice logs in and grants what was asked).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';

import Provider from 'oidc-provider';

import { freePort } from './server.mjs';

// sextant.read and sextant.write: scopes as Entra ID's scp claim names
// them (short), for a gateway that names them in URI form
export const SCOPES = ['sextant:read', 'sextant:ingest', 'sextant:write', 'other:scope', 'sextant.read', 'sextant.write'];

// clients: { id: 'scope ...' }; resources: accepted indicators, the first
// being the default.  Returns { issuer, token(clientId, scope, resource),
// close() }.
export async function startIssuer({ clients, resources }) {
	const port = await freePort();
	const issuer = `http://127.0.0.1:${port}`;
	const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
	const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'as-key-1', use: 'sig', alg: 'RS256' };
	const provider = new Provider(issuer, {
		jwks: { keys: [jwk] },
		clients: Object.entries(clients).map(([id, scope]) => ({
			client_id: id,
			client_secret: `${id}-secret`,
			grant_types: ['client_credentials'],
			redirect_uris: [],
			response_types: [],
			scope,
		})),
		scopes: SCOPES,
		interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
		features: {
			devInteractions: { enabled: false },
			clientCredentials: { enabled: true },
			registration: { enabled: true }, // RFC 7591, as MCP clients use
			resourceIndicators: {
				enabled: true,
				defaultResource: () => resources[0],
				useGrantedResource: () => true,
				getResourceServerInfo: (ctx, indicator) => {
					if (!resources.includes(indicator)) throw new Error(`unknown resource ${indicator}`);
					return {
						scope: SCOPES.join(' '),
						audience: indicator,
						accessTokenTTL: 600,
						accessTokenFormat: 'jwt',
						jwt: { sign: { alg: 'RS256' } },
					};
				},
			},
		},
	});
	provider.on('server_error', (ctx, err) => console.error('oidc-provider:', err));
	// the consent step, automated: every interaction is answered at once
	provider.use(async (ctx, next) => {
		if (!/^\/interaction\/[^/]+$/.test(ctx.path)) return next();
		const details = await provider.interactionDetails(ctx.req, ctx.res);
		let result;
		if (details.prompt.name === 'login') {
			result = { login: { accountId: 'alice' } };
		} else {
			const { params, prompt } = details;
			const grant = new provider.Grant({ accountId: details.session.accountId, clientId: params.client_id });
			if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
			for (const [rs, scopes] of Object.entries(prompt.details.missingResourceScopes ?? {}))
				grant.addResourceScope(rs, scopes.join(' '));
			result = { consent: { grantId: await grant.save() } };
		}
		ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: true }));
	});
	const server = provider.listen(port, '127.0.0.1');
	await new Promise((r) => server.once('listening', r));

	// a client-credentials token for resource and scope
	async function token(clientId, scope, resource = resources[0]) {
		const r = await fetch(`${issuer}/token`, {
			method: 'POST',
			headers: {
				'content-type': 'application/x-www-form-urlencoded',
				authorization: 'Basic ' + Buffer.from(`${clientId}:${clientId}-secret`).toString('base64'),
			},
			body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }),
		});
		const body = await r.json();
		assert.equal(r.status, 200, JSON.stringify(body));
		assert.equal(body.token_type.toLowerCase(), 'bearer');
		return body.access_token;
	}
	return { issuer, token, close: () => new Promise((r) => server.close(r)) };
}
