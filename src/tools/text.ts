/** Cutting text to a byte budget without splitting a UTF-8 character; the marker says how much went. */

const headMarker = (dropped: number) => `\n… [truncated: ${dropped} more bytes]`;
const tailMarker = (dropped: number) => `[truncated: ${dropped} earlier bytes] …\n`;

const isContinuationByte = (byte: number | undefined) =>
  byte !== undefined && (byte & 0xc0) === 0x80;

/** Keeps the beginning of `text`; the result, marker included, fits in `maxBytes`. */
export function keepHead(text: string, maxBytes: number): string {
  // A UTF-16 unit is at most 3 bytes of UTF-8: most texts fit without being encoded.
  if (text.length * 3 <= maxBytes) return text;
  const bytes = Buffer.from(text);
  if (bytes.length <= maxBytes) return text;
  let end = Math.max(0, maxBytes - Buffer.byteLength(headMarker(bytes.length)));
  while (end > 0 && isContinuationByte(bytes[end])) end--;
  return bytes.subarray(0, end).toString() + headMarker(bytes.length - end);
}

/**
 * Keeps the end of a stream of `totalBytes` whose last bytes are `tail`; the result, marker
 * included, fits in `maxBytes`.
 */
export function keepTail(tail: Buffer, totalBytes: number, maxBytes: number): string {
  if (totalBytes <= maxBytes) return tail.toString();
  const keep = Math.max(0, maxBytes - Buffer.byteLength(tailMarker(totalBytes)));
  let start = Math.max(0, tail.length - keep);
  while (start < tail.length && isContinuationByte(tail[start])) start++;
  return tailMarker(totalBytes - (tail.length - start)) + tail.subarray(start).toString();
}
