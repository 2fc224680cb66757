// A Kafka producer that serializes with Apicurio Registry's own Kafka serdes (3.x, from Maven
// Central), so tests see the values a Java platform service on Apicurio really writes: the
// Confluent wire format (magic byte 0, the 4-byte contentId, which is the id Apicurio's
// Confluent-compatible API answers), zstd record batches, acks=all. No build step: run it with
// the Java 17 source launcher on the classpath infra/registry-producer/pom.xml resolves (run.sh).
//
// Reads one JSON object per line on stdin:
//   {"format":"avro|protobuf|json-schema","topic":..,"key":..|null,"subject":..,
//    "schema":"<schema text as registered>","value":<the event in that format's JSON form>}
//       serializes `value` with that format's serde against the latest version of `subject`
//   {"flush":"<token>"}  waits for every send so far, then prints: flushed <token>
// and prints per acknowledged record: acked <topic> <partition> <offset>, or: error <message>
// (fields separated by tabs, as infra/java-producer/Producer.java's).
//
// The schemas are registered beforehand (tools/register-schemas.ts): the serdes never register.
// Each subject gets its own producer, its serde pointed at that subject explicitly (group
// `default`, where the ccompat API keeps subjects; find-latest): Apicurio's strategies name
// artifacts differently from our TopicRecordNameStrategy subjects, and its Protobuf serializer
// caches the schema per message class, which is DynamicMessage for every type here.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.OneofDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.util.JsonFormat;
import io.apicurio.registry.serde.avro.AvroKafkaSerializer;
import io.apicurio.registry.serde.jsonschema.JsonSchemaKafkaSerializer;
import io.apicurio.registry.serde.protobuf.ProtobufKafkaSerializer;
import io.apicurio.registry.serde.protobuf.ProtobufSchemaParser;
import io.apicurio.registry.utils.protobuf.schema.ProtobufSchema;
import com.squareup.wire.schema.Field;
import com.squareup.wire.schema.internal.parser.FieldElement;
import com.squareup.wire.schema.internal.parser.MessageElement;
import com.squareup.wire.schema.internal.parser.TypeElement;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class RegistryProducer {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, KafkaProducer<String, Object>> producers = new HashMap<>();
  private static final Map<String, Schema> avroSchemas = new HashMap<>();
  private static final Map<String, Descriptor> protoTypes = new HashMap<>();

  public static void main(String[] args) throws Exception {
    String brokers = args.length > 0 ? args[0] : "127.0.0.1:19092";
    // The registry's core API (v3), which the 3.x serdes speak; not the ccompat one.
    String registry = args.length > 1 ? args[1] : "http://127.0.0.1:18081/apis/registry/v3";
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    out("ready");
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isBlank()) continue;
      try {
        JsonNode command = JSON.readTree(line);
        if (command.has("flush")) {
          for (KafkaProducer<String, Object> p : producers.values()) p.flush();
          out("flushed\t" + command.get("flush").asText());
        } else {
          send(brokers, registry, command);
        }
      } catch (Exception e) {
        out("error\t" + describe(e));
      }
    }
    for (KafkaProducer<String, Object> p : producers.values()) p.close();
  }

  private static void send(String brokers, String registry, JsonNode c) throws Exception {
    String format = c.get("format").asText();
    String subject = c.get("subject").asText();
    String schema = c.get("schema").asText();
    JsonNode value = c.get("value");
    Object data = switch (format) {
      case "avro" -> avro(avroSchemas.computeIfAbsent(schema, s -> new Schema.Parser().parse(s)), value);
      case "protobuf" -> protobuf(schema, value);
      case "json-schema" -> value;
      default -> throw new IllegalArgumentException("unknown format " + format);
    };
    String key = c.hasNonNull("key") ? c.get("key").asText() : null;
    producer(brokers, registry, format, subject).send(
        new ProducerRecord<>(c.get("topic").asText(), key, data),
        (meta, error) -> {
          if (error != null) out("error\t" + describe(error));
          else out("acked\t" + meta.topic() + "\t" + meta.partition() + "\t" + meta.offset());
        });
  }

  private static KafkaProducer<String, Object> producer(
      String brokers, String registry, String format, String subject) {
    return producers.computeIfAbsent(format + "/" + subject, k -> {
      Properties props = new Properties();
      props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
      props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd");
      props.put(ProducerConfig.ACKS_CONFIG, "all");
      props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
      props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
      props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
      props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, switch (format) {
        case "avro" -> AvroKafkaSerializer.class.getName();
        case "protobuf" -> ProtobufKafkaSerializer.class.getName();
        default -> JsonSchemaKafkaSerializer.class.getName();
      });
      props.put("apicurio.registry.url", registry);
      // Registered by our tool already: look the subject up, never register from here.
      props.put("apicurio.registry.auto-register", "false");
      props.put("apicurio.registry.artifact.group-id", "default");
      props.put("apicurio.registry.artifact.artifact-id", subject);
      props.put("apicurio.registry.find-latest", "true");
      // The Confluent-compatible id mode: the id in the value (no Apicurio headers), 4 bytes,
      // the contentId (3.x's defaults, set here so a change of default shows).
      props.put("apicurio.registry.headers.enabled", "false");
      props.put("apicurio.registry.id-handler", "io.apicurio.registry.serde.Default4ByteIdHandler");
      props.put("apicurio.registry.use-id", "contentId");
      // Protobuf as Confluent writes it: the message indexes, not Apicurio's type reference.
      props.put("apicurio.registry.serde.send-type-ref", "false");
      props.put("apicurio.registry.serde.send-indexes", "true");
      // The serializers check the value against the registered schema before sending.
      props.put("apicurio.registry.serde.validation-enabled", "true");
      return new KafkaProducer<>(props);
    });
  }

  /** The JSON form of an Avro schema (unions as plain values) as the GenericRecord it describes. */
  private static Object avro(Schema s, JsonNode v) {
    switch (s.getType()) {
      case NULL:
        return null;
      case UNION: {
        if (v == null || v.isNull()) {
          if (s.getTypes().stream().anyMatch(t -> t.getType() == Schema.Type.NULL)) return null;
          throw new IllegalArgumentException("null for " + s);
        }
        for (Schema branch : s.getTypes()) if (fits(branch, v)) return avro(branch, v);
        throw new IllegalArgumentException(v + " fits no branch of " + s);
      }
      case RECORD: {
        GenericData.Record record = new GenericData.Record(s);
        for (Schema.Field f : s.getFields()) record.put(f.name(), avro(f.schema(), v.get(f.name())));
        return record;
      }
      case ARRAY: {
        List<Object> items = new ArrayList<>();
        for (JsonNode item : v) items.add(avro(s.getElementType(), item));
        return new GenericData.Array<>(s, items);
      }
      case MAP: {
        Map<String, Object> map = new HashMap<>();
        for (Map.Entry<String, JsonNode> e : v.properties()) map.put(e.getKey(), avro(s.getValueType(), e.getValue()));
        return map;
      }
      case ENUM:
        return new GenericData.EnumSymbol(s, v.asText());
      case STRING:
        return require(v, v != null && v.isTextual(), s).asText();
      case LONG:
        return require(v, v != null && v.canConvertToLong() && v.isIntegralNumber(), s).asLong();
      case INT:
        return require(v, v != null && v.canConvertToInt() && v.isIntegralNumber(), s).asInt();
      case DOUBLE:
        return require(v, v != null && v.isNumber(), s).asDouble();
      case FLOAT:
        return (float) require(v, v != null && v.isNumber(), s).asDouble();
      case BOOLEAN:
        return require(v, v != null && v.isBoolean(), s).asBoolean();
      default:
        throw new IllegalArgumentException("unsupported Avro type " + s.getType());
    }
  }

  private static JsonNode require(JsonNode v, boolean ok, Schema s) {
    if (!ok) throw new IllegalArgumentException(v + " is not a " + s.getType());
    return v;
  }

  /** Which branch of a union a JSON value takes: the first whose type it has. */
  private static boolean fits(Schema s, JsonNode v) {
    return switch (s.getType()) {
      case STRING, ENUM -> v.isTextual();
      case LONG, INT -> v.isIntegralNumber();
      case DOUBLE, FLOAT -> v.isNumber();
      case BOOLEAN -> v.isBoolean();
      case RECORD, MAP -> v.isObject();
      case ARRAY -> v.isArray();
      default -> false;
    };
  }

  /** The JSON form as a DynamicMessage of the file's first message (the one its subject names). */
  private static DynamicMessage protobuf(String schema, JsonNode v) throws Exception {
    Descriptor type = protoTypes.computeIfAbsent(schema, RegistryProducer::protoType);
    DynamicMessage.Builder builder = DynamicMessage.newBuilder(type);
    JsonFormat.parser().merge(JSON.writeValueAsString(v), builder);
    return builder.build();
  }

  /**
   * The descriptor of the schema's first message. Apicurio's parser (3.1.7) drops proto3
   * `optional`: its descriptor gives those fields no presence, so a 0 or "" would not be
   * written and a consumer would read "absent" where the producer said 0. A producer built
   * with protoc has them; the parsed source's labels put them back here (proto3_optional and
   * its synthetic oneof, as protoc writes them).
   */
  private static Descriptor protoType(String schema) {
    ProtobufSchema parsed = new ProtobufSchemaParser<>().parseSchema(schema.getBytes(StandardCharsets.UTF_8), Map.of());
    FileDescriptorProto.Builder file = parsed.getFileDescriptor().toProto().toBuilder();
    for (DescriptorProto.Builder m : file.getMessageTypeBuilderList()) {
      withPresence(m, element(parsed.getProtoFileElement().getTypes(), m.getName()));
    }
    try {
      FileDescriptor built = FileDescriptor.buildFrom(file.build(),
          parsed.getFileDescriptor().getDependencies().toArray(new FileDescriptor[0]));
      return built.getMessageTypes().get(0);
    } catch (DescriptorValidationException e) {
      throw new IllegalArgumentException(e);
    }
  }

  private static MessageElement element(List<TypeElement> types, String name) {
    for (TypeElement t : types) if (t instanceof MessageElement m && m.getName().equals(name)) return m;
    throw new IllegalStateException("no message " + name + " in the parsed schema");
  }

  private static void withPresence(DescriptorProto.Builder message, MessageElement source) {
    for (FieldElement f : source.getFields()) {
      if (f.getLabel() != Field.Label.OPTIONAL) continue;
      for (FieldDescriptorProto.Builder field : message.getFieldBuilderList()) {
        if (!field.getName().equals(f.getName()) || field.hasOneofIndex()) continue;
        // Synthetic oneofs come after the real ones, as protoc orders them.
        message.addOneofDecl(OneofDescriptorProto.newBuilder().setName("_" + field.getName()));
        field.setProto3Optional(true).setOneofIndex(message.getOneofDeclCount() - 1);
      }
    }
    for (DescriptorProto.Builder nested : message.getNestedTypeBuilderList()) {
      withPresence(nested, element(source.getNestedTypes(), nested.getName()));
    }
  }

  private static String describe(Throwable e) {
    StringBuilder text = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (text.length() > 0) text.append(" <- ");
      text.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage());
    }
    return text.toString().replace('\n', ' ').replace('\t', ' ');
  }

  private static synchronized void out(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
