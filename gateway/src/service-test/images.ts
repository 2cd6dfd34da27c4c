// service-test's pictures: real PNGs whose content is a pure function of the prompt, so the same
// request always yields the same bytes and a client can check its whole image pipeline (decode,
// size, count, url download, masks) without paying for a model. A picture is a diagonal gradient
// between two colours with a few discs on top, all chosen by a generator seeded with the prompt.
import { PNG } from 'pngjs';
import { seedOf, seededRandom } from './deterministic.ts';

export type ImageStyle = 'vivid' | 'natural';

export interface PatternOptions {
  prompt: string;
  /** Which of the `n` pictures of one request: each index gets its own design. */
  variant: number;
  width: number;
  height: number;
  style: ImageStyle;
  /** background=transparent: only the discs are opaque, so clients can test alpha handling. */
  transparentBackground: boolean;
}

interface Colour {
  r: number;
  g: number;
  b: number;
  hue: number;
}

interface Disc {
  /** Centre and radius relative to the picture, so every size shows the same design. */
  cx: number;
  cy: number;
  radius: number;
  colour: Colour;
}

export interface Design {
  from: Colour;
  to: Colour;
  discs: Disc[];
}

export function designOf(prompt: string, variant: number, style: ImageStyle): Design {
  const random = seededRandom(seedOf(`service-test image\n${variant}\n${prompt}`));
  // Natural pictures are muted; vivid ones saturated, as OpenAI's two styles are described.
  const saturation = style === 'vivid' ? 0.85 : 0.35;
  const colour = (lightness: number) => hslColour(random() * 360, saturation, lightness);
  const from = colour(0.3 + random() * 0.2);
  const to = colour(0.55 + random() * 0.2);
  const discs: Disc[] = [];
  const count = 3 + Math.floor(random() * 4);
  for (let i = 0; i < count; i++) {
    discs.push({ cx: 0.1 + random() * 0.8, cy: 0.1 + random() * 0.8, radius: 0.08 + random() * 0.22, colour: colour(0.4 + random() * 0.3) });
  }
  return { from, to, discs };
}

export function paintPattern(options: PatternOptions): PNG {
  const { width, height } = options;
  const design = designOf(options.prompt, options.variant, options.style);
  const png = new PNG({ width, height });
  const data = png.data;
  const shortSide = Math.min(width, height);
  const discs = design.discs.map((d) => ({ x: d.cx * width, y: d.cy * height, r2: (d.radius * shortSide) ** 2, colour: d.colour }));
  const span = Math.max(1, width - 1 + height - 1);
  for (let y = 0; y < height; y++) {
    // Only the discs this row crosses: a 2048-pixel picture is 4 million pixels.
    const rowDiscs = discs.filter((disc) => (y + 0.5 - disc.y) ** 2 <= disc.r2);
    for (let x = 0; x < width; x++) {
      const t = (x + y) / span;
      let r = design.from.r + (design.to.r - design.from.r) * t;
      let g = design.from.g + (design.to.g - design.from.g) * t;
      let b = design.from.b + (design.to.b - design.from.b) * t;
      let covered = false;
      for (const disc of rowDiscs) {
        const dx = x + 0.5 - disc.x;
        const dy = y + 0.5 - disc.y;
        if (dx * dx + dy * dy <= disc.r2) {
          // Slightly translucent discs, so overlaps stay visible as separate shapes.
          r = r * 0.15 + disc.colour.r * 0.85;
          g = g * 0.15 + disc.colour.g * 0.85;
          b = b * 0.15 + disc.colour.b * 0.85;
          covered = true;
        }
      }
      const offset = (y * width + x) * 4;
      data[offset] = Math.round(r);
      data[offset + 1] = Math.round(g);
      data[offset + 2] = Math.round(b);
      data[offset + 3] = options.transparentBackground && !covered ? 0 : 255;
    }
  }
  return png;
}

export interface EditOptions extends PatternOptions {
  /** The decoded input images; the first sets the geometry, the others are blended in evenly. */
  images: PNG[];
  /** Same size as images[0]; where its alpha is 0, the picture is repainted from the prompt. */
  mask: PNG | null;
}

/**
 * A scaled copy of the input(s). With a mask, the transparent areas of the mask are replaced by the
 * prompt's pattern and everything else is kept exactly; without one, the whole image is the
 * editable area, so the pattern is laid over it at a quarter strength: visibly edited, still
 * recognisably the input.
 */
export function editPicture(options: EditOptions): PNG {
  const { width, height, images, mask } = options;
  const pattern = paintPattern(options).data;
  const out = new PNG({ width, height });
  const data = out.data;
  const sum = [0, 0, 0, 0];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const offset = (y * width + x) * 4;
      if (mask && mask.data[sampleOffset(mask, x, y, width, height) + 3] === 0) {
        data.set(pattern.subarray(offset, offset + 4), offset);
        continue;
      }
      sum.fill(0);
      for (const image of images) {
        const source = sampleOffset(image, x, y, width, height);
        for (let c = 0; c < 4; c++) sum[c] += image.data[source + c];
      }
      for (let c = 0; c < 4; c++) {
        const kept = sum[c] / images.length;
        // Integer arithmetic on the kept value, so tests can predict every pixel exactly.
        data[offset + c] = mask ? Math.round(kept) : Math.round((3 * Math.round(kept) + pattern[offset + c]) / 4);
      }
    }
  }
  return out;
}

/** Nearest-neighbour sampling: an image of the output's own size is copied pixel for pixel. */
function sampleOffset(image: PNG, x: number, y: number, width: number, height: number): number {
  const sx = Math.min(image.width - 1, Math.floor((x * image.width) / width));
  const sy = Math.min(image.height - 1, Math.floor((y * image.height) / height));
  return (sy * image.width + sx) * 4;
}

export function encodePng(png: PNG): Buffer {
  // One fixed filter ("Up") instead of pngjs's per-row search: about six times faster on these
  // smooth gradients, for a file of the same size.
  return PNG.sync.write(png, { colorType: 6, filterType: 2 });
}

/** OpenAI's dall-e-3 rewrites prompts; service-test's rewrite describes what it actually drew. */
export function revisePrompt(prompt: string, variant: number, style: ImageStyle): string {
  const design = designOf(prompt, variant, style);
  const subject = prompt.trim().replace(/[.!?\s]+$/u, '');
  const mood = style === 'vivid' ? 'vivid' : 'soft, natural';
  return `${subject}, drawn as a ${mood} diagonal gradient from ${colourName(design.from)} to ${colourName(design.to)} with ${design.discs.length} overlapping circles.`;
}

function colourName(colour: Colour): string {
  const names = ['red', 'orange', 'yellow', 'lime', 'green', 'teal', 'cyan', 'azure', 'blue', 'violet', 'magenta', 'rose'];
  return names[Math.floor(((colour.hue + 15) % 360) / 30)];
}

function hslColour(hue: number, saturation: number, lightness: number): Colour {
  const chroma = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const segment = hue / 60;
  const x = chroma * (1 - Math.abs((segment % 2) - 1));
  const [r1, g1, b1] = segment < 1 ? [chroma, x, 0] : segment < 2 ? [x, chroma, 0] : segment < 3 ? [0, chroma, x] : segment < 4 ? [0, x, chroma] : segment < 5 ? [x, 0, chroma] : [chroma, 0, x];
  const m = lightness - chroma / 2;
  return { r: (r1 + m) * 255, g: (g1 + m) * 255, b: (b1 + m) * 255, hue };
}
