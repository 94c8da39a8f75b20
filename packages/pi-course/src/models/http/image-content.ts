/**
 * Images on their way out: what a model may take (`input`), and the check every image block
 * passes before an adapter puts it on the wire.
 *
 * The check runs while the request is built (`toChatCompletionsRequest`, `toAnthropicRequest`),
 * so a refused image never reaches the server: the adapter turns the thrown `TypeError` into an
 * `error` event of kind `request`, whose text says which message holds the image and what to do.
 * Refused: an image for a model whose options leave images out, a `mimeType` that is not an
 * image media type, and `data` that is not standard base64 (a `data:` URL included: its base64
 * goes in `data`, its media type in `mimeType`).
 */
import type { ImageContent } from "../../types.js";

/** What a model can take as input. */
export type InputKind = "text" | "image";

/** The model options about input, shared by both adapters. */
export interface InputOptions {
  /**
   * What the model can take. Defaults to `["text", "image"]`. Say `["text"]` for a model that
   * cannot see: a turn whose context holds an image then ends with an `error` event (kind
   * `request`) naming the message, and no request is sent.
   */
  input?: readonly InputKind[];
}

/** Throws (caller misuse) unless `input` is absent or a list of known kinds with `"text"`. */
export function checkInputOptions(options: InputOptions, who: string): void {
  const input: unknown = options.input;
  if (input === undefined) return;
  const valid =
    Array.isArray(input) && input.includes("text") && input.every((kind) => kind === "text" || kind === "image");
  if (!valid) {
    throw new TypeError(
      `${who}: input lists what the model takes: ["text"] or ["text", "image"], got ${JSON.stringify(input)}`,
    );
  }
}

/** A media type such as `image/png` (the wire formats carry nothing else). */
const IMAGE_MIME = /^image\/[A-Za-z0-9.+-]+$/;
/** Standard base64, padded. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Returns the block if it can be sent to this model; throws a `TypeError` saying what to do
 * otherwise. `where` names the message for that text, e.g. `context.messages[2] (user)`.
 */
export function checkImage(block: ImageContent, where: string, options: InputOptions): ImageContent {
  if (options.input !== undefined && !options.input.includes("image")) {
    throw new TypeError(
      `${where} holds an image, and this model takes no images (its options say input: ${JSON.stringify(options.input)}). ` +
        `Remove the image from the context (or describe it in text), or use a model that takes images and add "image" to input.`,
    );
  }
  const { data, mimeType } = block as { data: unknown; mimeType: unknown };
  if (typeof mimeType !== "string" || !IMAGE_MIME.test(mimeType)) {
    throw new TypeError(
      `${where} holds an image whose mimeType is not an image media type (got ${JSON.stringify(mimeType) ?? "nothing"}): ` +
        `set mimeType to the image's type, e.g. "image/png" or "image/jpeg".`,
    );
  }
  if (typeof data === "string" && data.startsWith("data:")) {
    throw new TypeError(
      `${where} holds an image whose data is a data: URL: put only the base64 after the comma in data, and its media type in mimeType.`,
    );
  }
  if (typeof data !== "string" || data === "" || data.length % 4 !== 0 || !BASE64.test(data)) {
    const got =
      typeof data === "string"
        ? `${data.length} characters starting ${JSON.stringify(data.slice(0, 12))}`
        : typeof data;
    throw new TypeError(
      `${where} holds an image whose data is not base64 (got ${got}): encode the image's bytes as standard, padded ` +
        `base64 without line breaks, e.g. Buffer.from(bytes).toString("base64").`,
    );
  }
  return block;
}
