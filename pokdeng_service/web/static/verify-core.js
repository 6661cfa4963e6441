/* pokdeng's in-browser verifier, part 1: the primitives, written from docs/audit.md ("Canonical JSON",
   "Hash chain", "Merkle trees"), docs/checkpoints.md ("The bytes signed") and docs/shuffle.md (sections 1
   to 7 and 13). Hashes, HMAC and Ed25519 are the browser's own WebCrypto; nothing is fetched. */
(function (root) {
  "use strict";
  const V = (root.PokdengVerify = root.PokdengVerify || {});
  const utf8 = new TextEncoder();

  /** A value outside the canonical JSON domain (a float, an integer of 2^53 or more, a lone surrogate). */
  class DomainError extends Error {}
  /** One check's first problem, said in words. */
  class Failed extends Error {}

  function require(condition, problem) {
    if (!condition) throw new Failed(problem);
  }

  // § Canonical JSON (RFC 8785) over the value domain: objects, arrays, text, true, false, null and
  // integers of magnitude below 2^53. Object members sorted by UTF-16 code units (JavaScript's own order).
  const SAFE = 2 ** 53;

  function wellFormed(text) {
    if (typeof text.isWellFormed === "function") return text.isWellFormed();
    return !/[\ud800-\udbff](?![\udc00-\udfff])|(?:^|[^\ud800-\udbff])[\udc00-\udfff]/.test(text);
  }

  function canon(value) {
    if (value === null) return "null";
    if (value === true) return "true";
    if (value === false) return "false";
    if (typeof value === "number") {
      if (!Number.isInteger(value) || Math.abs(value) >= SAFE) {
        throw new DomainError(`the number ${value} is outside the canonical domain (integers below 2^53)`);
      }
      return String(value);
    }
    if (typeof value === "string") {
      if (!wellFormed(value)) throw new DomainError("a text with a lone surrogate is outside the canonical domain");
      return JSON.stringify(value); // escapes exactly " \ and U+0000..U+001F (\b \t \n \f \r, else \u00xx)
    }
    if (Array.isArray(value)) return "[" + value.map(canon).join(",") + "]";
    if (typeof value === "object") {
      const keys = Object.keys(value).sort();
      return "{" + keys.map((k) => canon(k) + ":" + canon(value[k])).join(",") + "}";
    }
    throw new DomainError(`${typeof value} is not a JSON value`);
  }

  const canonicalBytes = (value) => utf8.encode(canon(value));

  // bytes
  function concat(...parts) {
    const length = parts.reduce((n, p) => n + p.length, 0);
    const out = new Uint8Array(length);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  function fromHex(text) {
    if (typeof text !== "string" || !/^(?:[0-9a-fA-F]{2})*$/.test(text)) throw new Failed(`not hex: ${String(text).slice(0, 20)}`);
    const out = new Uint8Array(text.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(2 * i, 2), 16);
    return out;
  }
  function bigEndian(value, bytes) {
    let n = BigInt(value);
    if (n < 0n || n >= 1n << BigInt(8 * bytes)) throw new Failed(`${value} does not fit in ${bytes} bytes`);
    const out = new Uint8Array(bytes);
    for (let i = bytes - 1; i >= 0; i--) {
      out[i] = Number(n & 0xffn);
      n >>= 8n;
    }
    return out;
  }
  const equalBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

  function subtle() {
    const s = root.crypto && root.crypto.subtle;
    if (!s) throw new Failed("this browser offers no WebCrypto here (open the page as a file, or over https)");
    return s;
  }
  const sha256 = async (bytes) => new Uint8Array(await subtle().digest("SHA-256", bytes));
  const sha256hex = async (bytes) => hex(await sha256(bytes));

  // § Hash chain: a link hashes the previous digest's 64 hex characters (as text), 0x00 and the canonical
  // JSON of the event's five members.
  const CHAIN_VERSION = "pokdeng-chain-v1";
  const genesis = (stream) => sha256hex(concat(utf8.encode(CHAIN_VERSION), [0], utf8.encode(stream)));
  function link(previous, kind, data, position, commandId, timestamp) {
    const body = { kind, data, position, command_id: commandId, timestamp };
    return sha256hex(concat(utf8.encode(previous), [0], canonicalBytes(body)));
  }

  // § Merkle trees (RFC 9162 section 2.1): leaf = SHA-256(0x00 ‖ round id ‖ 0x00 ‖ the 32 bytes of the
  // round's last digest), node = SHA-256(0x01 ‖ left ‖ right).
  const leafHash = (roundId, lastHex) => sha256(concat([0], utf8.encode(roundId), [0], fromHex(lastHex)));
  const nodeHash = (left, right) => sha256(concat([1], left, right));

  /** RFC 9162 section 2.1.3.2: the root a leaf and its path (leaf first) lead to, or null. Sizes may pass
   * 2^31: halving is done with arithmetic, not with 32-bit shifts. */
  async function rootFromInclusion(leaf, index, size, path) {
    if (!(Number.isSafeInteger(index) && Number.isSafeInteger(size) && index >= 0 && index < size)) return null;
    let fn = index;
    let sn = size - 1;
    let r = leaf;
    const odd = (n) => n % 2 === 1;
    const half = (n) => Math.floor(n / 2);
    for (const p of path) {
      if (sn === 0) return null;
      if (odd(fn) || fn === sn) {
        r = await nodeHash(p, r);
        while (!odd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      } else {
        r = await nodeHash(r, p);
      }
      fn = half(fn);
      sn = half(sn);
    }
    return sn === 0 ? r : null;
  }

  // § Signed tree heads (docs/checkpoints.md, "The bytes signed")
  function opaque(bytes) {
    require(bytes.length >= 1 && bytes.length <= 255, "an opaque field is 1 to 255 bytes");
    return concat([bytes.length], bytes);
  }
  function headSignedBytes(head) {
    const root = fromHex(head.root_hash);
    require(root.length === 32, "root_hash is 32 bytes");
    require(/^[\x20-\x7e]*$/.test(head.key_id), "the key id is ASCII");
    return concat(
      utf8.encode("pokdeng-tree-head-v1"), [0],
      opaque(utf8.encode(head.log_id)),
      opaque(utf8.encode(head.key_id)),
      bigEndian(head.timestamp, 8),
      bigEndian(head.tree_size, 8),
      opaque(root),
    );
  }
  const keyId = async (publicKey) => hex((await sha256(publicKey)).slice(0, 8));

  /** Pure Ed25519 (RFC 8032) with WebCrypto. Rejects with ``Unsupported`` where the browser has none. */
  class Unsupported extends Error {}
  async function ed25519Verify(publicKey, signature, message) {
    let key;
    try {
      key = await subtle().importKey("raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
    } catch (error) {
      if (error && error.name === "NotSupportedError") throw new Unsupported("this browser's WebCrypto has no Ed25519");
      throw new Failed(`not an Ed25519 public key: ${error && error.message}`);
    }
    return subtle().verify({ name: "Ed25519" }, key, signature, message);
  }

  // § The shuffle (docs/shuffle.md): the canonical shoe (section 1), the HMAC-SHA256 stream of 32-bit
  // big-endian words (section 4), uniform draws with the rejection step (section 5), Fisher–Yates from
  // the last position down (section 6); deck[0] is dealt first (section 7).
  const RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
  const CANONICAL_DECK = [].concat(...Array.from("SHCD", (suit) => RANKS.map((rank) => rank + suit)));
  const SHUFFLE_TAG = "pokdeng-shuffle-v1";

  function commitment(serverSeed) {
    return sha256hex(serverSeed);
  }

  async function words(serverSeed, clientSeed, nonce) {
    const cs = utf8.encode(clientSeed);
    const prefix = concat(utf8.encode(SHUFFLE_TAG), [0], bigEndian(cs.length, 2), cs, bigEndian(nonce, 8));
    const key = await subtle().importKey("raw", serverSeed, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    let block = 0;
    let buffer = [];
    return async function next() {
      if (buffer.length === 0) {
        const digest = new DataView(await subtle().sign("HMAC", key, concat(prefix, bigEndian(block, 4))));
        for (let k = 0; k < 32; k += 4) buffer.push(digest.getUint32(k, false));
        block += 1;
      }
      return buffer.shift();
    };
  }

  async function shuffle(serverSeed, clientSeed, nonce, decks) {
    require(Number.isInteger(decks) && decks >= 1 && decks <= 64, `decks ${decks}`);
    const next = await words(serverSeed, clientSeed, nonce);
    const deck = [];
    for (let d = 0; d < decks; d++) deck.push(...CANONICAL_DECK);
    for (let i = deck.length - 1; i > 0; i--) {
      const n = i + 1;
      const limit = Math.floor(2 ** 32 / n) * n;
      let w = await next();
      while (w >= limit) w = await next(); // the rejection step: the word is consumed and another read
      const j = w % n;
      [deck[i], deck[j]] = [deck[j], deck[i]];
    }
    return deck;
  }

  /** Compare texts by Unicode code points, which is the order of their UTF-8 bytes. */
  function byCodePoints(a, b) {
    const x = Array.from(a, (c) => c.codePointAt(0));
    const y = Array.from(b, (c) => c.codePointAt(0));
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
    return x.length - y.length;
  }

  function clientSeedMessage(contributions) {
    const field = (text) => {
      const data = utf8.encode(text);
      return concat(bigEndian(data.length, 2), data);
    };
    const ordered = [...contributions].sort((p, q) => byCodePoints(p[0], q[0]));
    const parts = [utf8.encode("pokdeng-client-seed-v1"), [0], bigEndian(ordered.length, 4)];
    for (const [contributor, seed] of ordered) parts.push(field(contributor), field(seed));
    return concat(...parts);
  }
  const deriveClientSeed = (contributions) => sha256hex(clientSeedMessage(contributions));

  V.core = {
    DomainError, Failed, Unsupported, require, canon, canonicalBytes, concat, hex, fromHex, bigEndian, equalBytes,
    sha256, sha256hex, CHAIN_VERSION, genesis, link, leafHash, nodeHash, rootFromInclusion, headSignedBytes,
    keyId, ed25519Verify, RANKS, CANONICAL_DECK, commitment, shuffle, byCodePoints, clientSeedMessage,
    deriveClientSeed,
  };
})(globalThis);
