import com.fasterxml.jackson.annotation.JsonTypeInfo;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.util.Iterator;
import java.util.Map;

// Reads every example message into the model class Modelina generated for it, writes it back,
// and compares the two as JSON: same keys, same values (date-times as instants, since the
// model keeps an OffsetDateTime; null and absent alike, as a Java field cannot tell them apart).
// Input: a JSON array of { "model": "<class>", "payload": {...} }. Prints "N round trips".
//
// Each example is read into the class its message names. Modelina makes one union interface per
// channel whose Jackson type info is DEDUCTION, inherited by every class of the channel; it cannot
// tell grant.added from grant.removed (same fields; only the `type` const differs), so the
// concrete class is read without it (a mix-in), as a Java consumer that picks the class by `type`
// would. Writing, which is what a producer does, needs no such help.
public final class RoundTrip {
  @JsonTypeInfo(use = JsonTypeInfo.Id.NONE)
  private interface ByClass {}

  public static void main(String[] args) throws Exception {
    ObjectMapper mapper = new ObjectMapper().registerModule(new JavaTimeModule())
        .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS);
    JsonNode examples = mapper.readTree(Files.readString(Path.of(args[0])));
    int n = 0;
    for (JsonNode example : examples) {
      Class<?> model = Class.forName("contracts." + example.get("model").asText());
      mapper.addMixIn(model, ByClass.class);
      JsonNode payload = example.get("payload");
      Object value = mapper.treeToValue(payload, model);
      JsonNode back = mapper.readTree(mapper.writeValueAsString(value));
      if (!same(withoutNulls(payload), withoutNulls(back))) {
        throw new AssertionError(model.getSimpleName() + ": " + payload + " came back as " + back);
      }
      n++;
    }
    System.out.println(n + " round trips");
  }

  private static JsonNode withoutNulls(JsonNode node) {
    if (node.isObject()) {
      ObjectNode copy = ((ObjectNode) node).objectNode();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (!e.getValue().isNull()) copy.set(e.getKey(), withoutNulls(e.getValue()));
      }
      return copy;
    }
    return node;
  }

  private static boolean same(JsonNode a, JsonNode b) {
    if (a.isObject() && b.isObject()) {
      if (a.size() != b.size()) return false;
      for (Iterator<String> it = a.fieldNames(); it.hasNext(); ) {
        String k = it.next();
        if (!b.has(k) || !same(a.get(k), b.get(k))) return false;
      }
      return true;
    }
    if (a.isTextual() && b.isTextual()) return a.asText().equals(b.asText()) || sameInstant(a.asText(), b.asText());
    if (a.isNumber() && b.isNumber()) return a.decimalValue().compareTo(b.decimalValue()) == 0;
    return a.equals(b);
  }

  private static boolean sameInstant(String a, String b) {
    try {
      return OffsetDateTime.parse(a).toInstant().equals(OffsetDateTime.parse(b).toInstant());
    } catch (RuntimeException e) {
      return false;
    }
  }
}
