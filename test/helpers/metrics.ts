// One scrape of a Prometheus endpoint (the gateway's metrics listener), read by series name.

/** Scrapes `url` once; the reader gives an unlabelled series' value, and throws if it is not exposed. */
export async function scrape(url: string): Promise<(name: string) => number> {
  const text = await (await fetch(url)).text();
  return (name) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    if (!line) throw new Error(`${name} is not exposed at ${url}`);
    return Number(line.slice(name.length + 1));
  };
}
