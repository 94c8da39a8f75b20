/**
 * A browser that consents at once, for authorization servers that approve without a page (the
 * conformance suite's, the tests' own): it follows the authorization endpoint's redirects by
 * hand to the redirect URI (the client's loopback listener), as a browser would.
 */
export async function consentingBrowser(url: string): Promise<void> {
  let at = url;
  for (let hop = 0; hop < 5; hop++) {
    const response = await fetch(at, { redirect: "manual" });
    await response.body?.cancel();
    const location = response.headers.get("location");
    if (location === null) return;
    at = new URL(location, at).href;
  }
}
