import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A producer that is not the relay's: Apache Kafka's own Java client, run in single-file source mode against the
 * kafka-clients jar the local stack caches (it brings snappy-java, lz4-java and zstd-jni, the codecs a Java
 * producer really uses). Reads "codec TAB partition TAB key TAB value" lines from stdin; one producer per codec
 * (a batch has one codec). Batches close only on flush (a linger far longer than the sends take, a batch size far
 * larger than the records), so each codec's records travel as one multi-record batch per partition however slowly
 * the JVM sends them. Prints one JSON line per codec with the producer's own compression-rate-avg, the evidence
 * that the batches were compressed.
 *
 * Usage: java -cp 'LIBS/*' JavaProducer.java BOOTSTRAP TOPIC < records.tsv
 */
public class JavaProducer {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    Map<String, List<String[]>> byCodec = new LinkedHashMap<>();
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      for (String line; (line = in.readLine()) != null; ) {
        if (line.isEmpty()) continue;
        String[] f = line.split("\t", 4);
        byCodec.computeIfAbsent(f[0], c -> new ArrayList<>()).add(f);
      }
    }
    for (Map.Entry<String, List<String[]>> e : byCodec.entrySet()) {
      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
      p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, e.getKey());
      p.put(ProducerConfig.ACKS_CONFIG, "all");
      p.put(ProducerConfig.LINGER_MS_CONFIG, "60000");
      p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(1 << 20));
      p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (String[] f : e.getValue()) {
          sent.add(producer.send(new ProducerRecord<>(topic, Integer.parseInt(f[1]), f[2], f[3])));
        }
        producer.flush();
        for (Future<RecordMetadata> s : sent) s.get();
        double rate = Double.NaN;
        for (Map.Entry<MetricName, ? extends Metric> m : producer.metrics().entrySet()) {
          if (m.getKey().name().equals("compression-rate-avg")
              && m.getKey().group().equals("producer-metrics")) {
            rate = ((Number) m.getValue().metricValue()).doubleValue();
          }
        }
        System.out.printf(
            "{\"codec\":\"%s\",\"sent\":%d,\"compressionRate\":%s}%n",
            e.getKey(), sent.size(), Double.isNaN(rate) ? "null" : String.valueOf(rate));
      }
    }
  }
}
