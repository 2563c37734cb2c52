package io.refind.lucene;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every record the Python side ({@code refind/store/_wire.py}) and this engine exchange, named in one place.
 * Arguments and results cross the bridge as JSON (one value per call); a record is a JSON array whose fields
 * come in the order {@link #LAYOUT} lists (the Python module lists the same order, and {@code
 * tests/test_wire.py} holds the two equal). Arrays, not objects, because a batch of 20,000 messages or a
 * round's hits cross on every call: the field names would be most of the bytes. Only this class reads or
 * writes a record's fields by position.
 *
 * <p>Python to Java: {@code message} (a write batch's records, and what {@link Documents.MessageDoc#fill}
 * indexes), {@code session}, {@code info}, {@code marker} (a write batch's other parts), {@code
 * standing_change} ({@link Engine#setStanding}), {@code vector} ({@link Engine#writeVectors}), {@code window}
 * ({@link Engine#windows}). Java to Python: {@code round_hit}, {@code selected}, {@code span} ({@link
 * Engine#round}), {@code scored_session} (session and title rankings), {@code session_summary}, {@code
 * session_info} (also stored as is in the info document), {@code expired_session} ({@link Engine#expire}),
 * {@code pending} ({@link Engine#pendingVectors}), {@code vector_counts}.
 *
 * <p>Two shapes are JSON objects, their keys their names: a hit ({@link #hit}: id, session_id, turn, ts,
 * role, score, and raw, the stored message, when read with content) and the filters and round spec the
 * reads take (their keys are read where they are used: {@link Queries#filtered}, {@link Rounds#round}).
 */
public final class Wire {
  private Wire() {}

  static final ObjectMapper MAPPER = new ObjectMapper();
  static final JsonFactory JSON = MAPPER.getFactory();
  // Results that carry messages are UTF-8 bytes, not Strings: the bridge copies a byte[] as it is, while a
  // String holding any non-ASCII character is converted to Python char by char
  private static final byte[] EMPTY_LIST = "[]".getBytes(java.nio.charset.StandardCharsets.UTF_8);

  /** The fields of every positional record, in their order on the wire. */
  static final Map<String, List<String>> LAYOUT = new LinkedHashMap<>();

  static {
    LAYOUT.put("message", List.of(
        "user_id", "session_id", "id", "turn", "ts", "role", "content", "speaker", "time_text", "replace",
        "standing"));
    LAYOUT.put("session", List.of("user_id", "session_id", "text", "new", "appended"));
    LAYOUT.put("info", List.of("user_id", "session_id", "title", "source", "project"));
    LAYOUT.put("marker", List.of("user_id", "request_id", "payload"));
    LAYOUT.put("standing_change", List.of("user_id", "id", "standing"));
    LAYOUT.put("vector", List.of("user_id", "id", "token", "vector"));
    LAYOUT.put("window", List.of("session_id", "first_turn", "last_turn"));
    LAYOUT.put("round_hit", List.of("id", "session_id", "turn", "ts", "role", "score"));
    LAYOUT.put("selected", List.of("id", "score"));
    LAYOUT.put("span", List.of("session_id", "first_turn", "last_turn", "best", "turns"));
    LAYOUT.put("scored_session", List.of("session_id", "score"));
    LAYOUT.put("session_summary", List.of("session_id", "messages", "first_ts", "last_ts"));
    LAYOUT.put("session_info", List.of("session_id", "title", "source", "project"));
    LAYOUT.put("expired_session", List.of("user_id", "session_id", "contents"));
    LAYOUT.put("pending", List.of("user_id", "id", "token", "content"));
    LAYOUT.put("vector_counts", List.of("vectors", "pending"));
  }

  /** {@link #LAYOUT} as JSON (record name to its fields in order), for the test that holds both sides equal. */
  public static String layout() throws IOException {
    return MAPPER.writeValueAsString(LAYOUT);
  }

  /** An empty JSON list, as the bytes a read returns. */
  static byte[] emptyList() {
    return EMPTY_LIST.clone();
  }

  /** The strings of a JSON list (none when {@code node} is not a list). */
  static List<String> strings(JsonNode node) {
    List<String> out = new ArrayList<>();
    if (node != null && node.isArray()) {
      for (JsonNode n : node) {
        out.add(n.asText());
      }
    }
    return out;
  }

  static String textOrNull(JsonNode n) {
    return n == null || n.isNull() ? null : n.asText();
  }

  // ------------------------------------------------------------------------------------- Python to Java

  /**
   * A message to index ({@code message}): {@code speaker} and {@code timeText} may be null, {@code replace}
   * (true unless false on the wire) replaces the stored message of its id, {@code standing} is null or
   * {kind, sentence, domain, subject, change} (what the message says that stands: issue 37).
   */
  public record Message(
      String user, String session, String id, int turn, long ts, String role, String content, String speaker,
      String timeText, boolean replace, JsonNode standing) {}

  static Message message(JsonNode r) {
    JsonNode speaker = r.get(7);
    JsonNode time = r.get(8);
    return new Message(
        r.get(0).asText(), r.get(1).asText(), r.get(2).asText(), r.get(3).asInt(), r.get(4).asLong(),
        r.get(5).asText(), r.get(6).asText(), speaker.isNull() ? null : speaker.asText(),
        time.isNull() ? null : time.asText(), r.get(9).asBoolean(true), r.size() > 10 ? r.get(10) : null);
  }

  /**
   * A session's whole text ({@code session}): {@code text} null removes its documents; {@code appended} n
   * >= 0: the text is its first n characters, already stored, followed by this batch's messages of it.
   */
  record Session(String user, String session, String text, boolean isNew, int appended) {}

  static Session session(JsonNode s) {
    return new Session(
        s.get(0).asText(), s.get(1).asText(), s.get(2).isNull() ? null : s.get(2).asText(),
        s.get(3).asBoolean(false), s.get(4).asInt(-1));
  }

  /** A session's title, source and project ({@code info}), each may be null. */
  record Info(String user, String session, String title, String source, String project) {}

  static Info info(JsonNode s) {
    return new Info(s.get(0).asText(), s.get(1).asText(), textOrNull(s.get(2)), textOrNull(s.get(3)),
        textOrNull(s.get(4)));
  }

  /** An idempotent request's marker ({@code marker}): its payload is stored and handed back as it is. */
  record Marker(String user, String requestId, String payload) {}

  static Marker marker(JsonNode m) {
    return new Marker(m.get(0).asText(), m.get(1).asText(), m.get(2).asText());
  }

  /** What a stored message says that stands, set anew ({@code standing_change}; standing null: nothing). */
  record StandingChange(String user, String id, JsonNode standing) {}

  static StandingChange standingChange(JsonNode e) {
    return new StandingChange(e.get(0).asText(), e.get(1).asText(), e.get(2));
  }

  /**
   * A message's vector ({@code vector}), made from the content of {@code token}; its values are read as floats
   * only when it is written ({@link #floats}).
   */
  record Vector(String user, String id, String token, JsonNode values) {
    float[] floats() {
      float[] v = new float[values.size()];
      for (int i = 0; i < v.length; i++) {
        v[i] = (float) values.get(i).asDouble();
      }
      return v;
    }
  }

  static Vector vector(JsonNode r) {
    return new Vector(r.get(0).asText(), r.get(1).asText(), r.get(2).asText(), r.get(3));
  }

  /** The turns {@code lo} to {@code hi} of a session ({@code window}). */
  static Rounds.Span window(JsonNode span) {
    return new Rounds.Span(span.get(0).asText(), span.get(1).asLong(), span.get(2).asLong(), 0.0);
  }

  // ------------------------------------------------------------------------------------- Java to Python

  /** A hit as a JSON object: its doc-value fields, and its stored message ("raw") when read with content. */
  static void hit(JsonGenerator g, Hits.Hit h) throws IOException {
    g.writeStartObject();
    g.writeStringField("id", h.id);
    g.writeStringField("session_id", h.session);
    g.writeNumberField("turn", h.turn);
    g.writeNumberField("ts", h.ts);
    g.writeStringField("role", h.role);
    g.writeNumberField("score", h.score);
    if (h.raw != null) {
      g.writeFieldName("raw");
      g.writeRawValue(h.raw);
    }
    g.writeEndObject();
  }

  /** Hits as a JSON list ({@link #hit} each). */
  static void hits(JsonGenerator g, List<Hits.Hit> hits) throws IOException {
    g.writeStartArray();
    for (Hits.Hit h : hits) {
      hit(g, h);
    }
    g.writeEndArray();
  }

  /** A round's hit without content ({@code round_hit}). */
  static void roundHit(JsonGenerator g, Hits.Hit h) throws IOException {
    g.writeStartArray();
    g.writeString(h.id);
    g.writeString(h.session);
    g.writeNumber(h.turn);
    g.writeNumber(h.ts);
    g.writeString(h.role);
    g.writeNumber(h.score);
    g.writeEndArray();
  }

  /** A chosen hit and its fused score ({@code selected}). */
  static void selected(JsonGenerator g, Rounds.Scored e) throws IOException {
    g.writeStartArray();
    g.writeString(e.hit().id);
    g.writeNumber(e.score());
    g.writeEndArray();
  }

  /** A span around chosen hits with its turns ({@code span}). */
  static void span(JsonGenerator g, Rounds.Span span, List<Hits.Hit> turns) throws IOException {
    g.writeStartArray();
    g.writeString(span.session());
    g.writeNumber(span.lo());
    g.writeNumber(span.hi());
    g.writeNumber(span.best());
    hits(g, turns);
    g.writeEndArray();
  }

  /** Sessions by score ({@code scored_session} each), as a JSON list. */
  static String scoredSessions(List<Sessions.Ranked> scored) throws IOException {
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartArray();
      for (Sessions.Ranked e : scored) {
        g.writeStartArray();
        g.writeString(e.session());
        g.writeNumber(e.score());
        g.writeEndArray();
      }
      g.writeEndArray();
    }
    return out.toString();
  }

  /** A session's messages and time range ({@code session_summary}). */
  static void sessionSummary(JsonGenerator g, String session, long messages, long first, long last)
      throws IOException {
    g.writeStartArray();
    g.writeString(session);
    g.writeNumber(messages);
    g.writeNumber(first);
    g.writeNumber(last);
    g.writeEndArray();
  }

  /** A session's info ({@code session_info}), as the JSON the info document stores and a read returns. */
  static String sessionInfo(String session, String title, String source, String project) throws IOException {
    StringWriter raw = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(raw)) {
      g.writeStartArray();
      g.writeString(session);
      g.writeString(title);
      g.writeString(source);
      g.writeString(project);
      g.writeEndArray();
    }
    return raw.toString();
  }

  /** A session that lost messages to retention, with its remaining turns' contents ({@code expired_session}). */
  static void expiredSession(JsonGenerator g, String user, String session, List<String> contents)
      throws IOException {
    g.writeStartArray();
    g.writeString(user);
    g.writeString(session);
    g.writeStartArray();
    for (String c : contents) {
      g.writeString(c);
    }
    g.writeEndArray();
    g.writeEndArray();
  }

  /** A message awaiting its vector ({@code pending}). */
  static void pending(JsonGenerator g, String user, String id, String token, String content) throws IOException {
    g.writeStartArray();
    g.writeString(user);
    g.writeString(id);
    g.writeString(token);
    g.writeString(content);
    g.writeEndArray();
  }

  /** A person's (or everyone's) vectors and messages awaiting theirs ({@code vector_counts}). */
  static String vectorCounts(long vectors, long pending) {
    return "[" + vectors + "," + pending + "]";
  }
}
