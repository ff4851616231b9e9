// api.js - the console's one door to the gateway: GET /api/v1/... (the REST
// facade) with the API key, when the gateway asks for one, as a bearer
// header.  The key is asked once (a dialog), kept in sessionStorage for the
// tab and never put in a URL.
const KEY = 'sextant.api_key';

export class ApiError extends Error {
	constructor(status, problem) {
		super(problem?.detail || problem?.title || `HTTP ${status}`);
		this.status = status;
		this.problem = problem;
	}
}

let asking = null;
function askKey() {
	asking ??= new Promise((resolve) => {
		const dlg = document.getElementById('cx-key');
		const input = document.getElementById('cx-key-input');
		dlg.addEventListener(
			'close',
			() => {
				asking = null;
				const v = input.value.trim();
				if (v) sessionStorage.setItem(KEY, v);
				input.value = '';
				resolve(!!v);
			},
			{ once: true },
		);
		dlg.showModal();
		input.focus();
	});
	return asking;
}

// The data of a GET on the facade (its {"tool","data","text"} answer);
// throws ApiError with the problem+json on an error.
export async function api(path, params = {}) {
	const qs = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ''));
	const url = `/api/v1/${path}${qs.size ? `?${qs}` : ''}`;
	for (let attempt = 0; ; attempt++) {
		const key = sessionStorage.getItem(KEY);
		const res = await fetch(url, { headers: { Accept: 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}) } });
		if (res.status === 401 && attempt < 3) {
			if (key) sessionStorage.removeItem(KEY);
			if (await askKey()) continue;
		}
		const body = await res.json().catch(() => null);
		if (!res.ok) throw new ApiError(res.status, body);
		return body.data;
	}
}
