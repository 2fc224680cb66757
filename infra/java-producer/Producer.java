// A Kafka producer from the Java client itself (kafka-clients from Maven Central, the same as
// the broker's), so tests see the record batches Java producers really write: snappy in the
// xerial framing, lz4 frames, zstd, transactions with their markers. No build step: run it with
// the Java 17 source launcher and the broker's classpath (infra/java-producer/run.sh).
//
// Reads commands from stdin, one per line, fields separated by tabs:
//   send <codec> <topic> <partition|-> <key|\N> <value|\N>   codec: none gzip snappy lz4 zstd
//   begin <codec> <transactional.id>     starts a transaction on that producer (created once)
//   commit | abort                       ends the open transaction
//   flush <token>                        waits for every send so far, then prints: flushed <token>
// and prints per acknowledged record: acked <topic> <partition> <offset>, or: error <message>.
// acks=all, idempotent; one producer per codec (and per transactional.id).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Producer {
  private static final Map<String, KafkaProducer<byte[], byte[]>> producers = new HashMap<>();
  private static KafkaProducer<byte[], byte[]> inTransaction;

  public static void main(String[] args) throws Exception {
    String brokers = args.length > 0 ? args[0] : "127.0.0.1:19092";
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    out("ready");
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isEmpty()) continue;
      String[] f = line.split("\t", -1);
      try {
        switch (f[0]) {
          case "send" -> send(brokers, f);
          case "begin" -> {
            inTransaction = producer(brokers, f[1], f[2]);
            inTransaction.beginTransaction();
          }
          case "commit" -> {
            inTransaction.commitTransaction();
            inTransaction = null;
          }
          case "abort" -> {
            inTransaction.abortTransaction();
            inTransaction = null;
          }
          case "flush" -> {
            for (KafkaProducer<byte[], byte[]> p : producers.values()) p.flush();
            out("flushed\t" + f[1]);
          }
          default -> out("error\tunknown command " + f[0]);
        }
      } catch (Exception e) {
        out("error\t" + e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' '));
      }
    }
    for (KafkaProducer<byte[], byte[]> p : producers.values()) p.close();
  }

  private static void send(String brokers, String[] f) {
    KafkaProducer<byte[], byte[]> p = inTransaction != null ? inTransaction : producer(brokers, f[1], null);
    Integer partition = f[3].equals("-") ? null : Integer.valueOf(f[3]);
    ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(f[2], partition, bytes(f[4]), bytes(f[5]));
    p.send(record, (meta, error) -> {
      if (error != null) out("error\t" + error.getMessage());
      else out("acked\t" + meta.topic() + "\t" + meta.partition() + "\t" + meta.offset());
    });
  }

  private static byte[] bytes(String field) {
    return field.equals("\\N") ? null : field.getBytes(StandardCharsets.UTF_8);
  }

  private static KafkaProducer<byte[], byte[]> producer(String brokers, String codec, String transactionalId) {
    return producers.computeIfAbsent(codec + "/" + transactionalId, k -> {
      Properties props = new Properties();
      props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
      props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
      props.put(ProducerConfig.ACKS_CONFIG, "all");
      props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
      props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
      props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
      props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
      props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
      if (transactionalId != null) props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
      KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props);
      if (transactionalId != null) p.initTransactions();
      return p;
    });
  }

  private static synchronized void out(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
