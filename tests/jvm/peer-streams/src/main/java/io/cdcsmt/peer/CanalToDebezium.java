package io.cdcsmt.peer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.temporal.ChronoField;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The Kafka Streams peer of bench/peer.py: Canal JSON in, Debezium JSON (no schema) out, the
 * conversion cdc-smt's canal-json -> debezium-json does with its defaults: values typed by the
 * message's mysqlType (integers as numbers, DECIMAL as base64 of the unscaled integer, DATETIME as
 * epoch milliseconds, TIMESTAMP as an ISO-8601 UTC instant, DATE as epoch days), UPDATE's before
 * image rebuilt from "old", a tombstone after each delete, the primary key as the record key.
 *
 * <p>Usage: {@code CanalToDebezium BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC APPLICATION_ID}. Runs until
 * SIGTERM; one stream thread, at-least-once, as the worker runs.
 */
public final class CanalToDebezium {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  private static final DateTimeFormatter DATETIME =
      new DateTimeFormatterBuilder()
          .appendPattern("yyyy-MM-dd HH:mm:ss")
          .optionalStart()
          .appendFraction(ChronoField.NANO_OF_SECOND, 0, 9, true)
          .optionalEnd()
          .toFormatter();
  private static final DateTimeFormatter ISO_UTC = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss'Z'");

  /** One column's conversion from Canal's text to Debezium's JSON value. */
  private interface Converter {
    JsonNode convert(String text);
  }

  /** Converters per MySQL type text, parsed once (the hot path looks them up). */
  private static final Map<String, Converter> CONVERTERS = new ConcurrentHashMap<>();

  private static Converter converterFor(String mysqlType) {
    return CONVERTERS.computeIfAbsent(mysqlType, CanalToDebezium::parseType);
  }

  private static Converter parseType(String mysqlType) {
    String base = mysqlType.toLowerCase().replaceAll("\\(.*", "").replace(" unsigned", "").trim();
    switch (base) {
      case "tinyint":
      case "smallint":
      case "mediumint":
      case "int":
      case "integer":
      case "bigint":
        return text -> NODES.numberNode(Long.parseLong(text));
      case "decimal":
        {
          int scale = decimalScale(mysqlType);
          return text ->
              NODES.textNode(
                  Base64.getEncoder()
                      .encodeToString(new BigDecimal(text).setScale(scale).unscaledValue().toByteArray()));
        }
      case "float":
      case "double":
        return text -> NODES.numberNode(Double.parseDouble(text));
      case "datetime":
        return text ->
            NODES.numberNode(LocalDateTime.parse(text, DATETIME).toInstant(ZoneOffset.UTC).toEpochMilli());
      case "timestamp":
        return text -> NODES.textNode(LocalDateTime.parse(text, DATETIME).format(ISO_UTC));
      case "date":
        return text -> NODES.numberNode(LocalDate.parse(text).toEpochDay());
      default:
        return NODES::textNode;
    }
  }

  private static int decimalScale(String mysqlType) {
    int comma = mysqlType.indexOf(',');
    return comma < 0 ? 0 : Integer.parseInt(mysqlType.substring(comma + 1, mysqlType.indexOf(')')).trim());
  }

  private static ObjectNode typed(JsonNode row, JsonNode mysqlType) {
    ObjectNode out = NODES.objectNode();
    Iterator<Map.Entry<String, JsonNode>> fields = row.fields();
    while (fields.hasNext()) {
      Map.Entry<String, JsonNode> f = fields.next();
      JsonNode v = f.getValue();
      JsonNode type = mysqlType.get(f.getKey());
      out.set(
          f.getKey(),
          v.isNull() ? v : type == null ? v : converterFor(type.asText()).convert(v.asText()));
    }
    return out;
  }

  private static ObjectNode source(JsonNode msg) {
    ObjectNode s = NODES.objectNode();
    s.put("version", "kafka-streams-peer");
    s.put("connector", "mysql");
    s.put("name", "cdc_smt");
    s.set("ts_ms", msg.get("es"));
    s.put("snapshot", "false");
    s.set("db", msg.get("database"));
    s.putNull("sequence");
    s.set("table", msg.get("table"));
    s.put("server_id", 0);
    s.putNull("gtid");
    s.put("file", "");
    s.put("pos", 0);
    s.put("row", 0);
    s.putNull("thread");
    s.putNull("query");
    return s;
  }

  /** The Debezium records (key, value; value null for a tombstone) of one Canal message. */
  static List<KeyValue<byte[], byte[]>> convert(byte[] canal) throws Exception {
    JsonNode msg = JSON.readTree(canal);
    List<KeyValue<byte[], byte[]>> out = new ArrayList<>();
    if (msg.path("isDdl").asBoolean(false)) {
      return out;
    }
    String type = msg.get("type").asText();
    String op;
    switch (type) {
      case "INSERT":
        op = "c";
        break;
      case "UPDATE":
        op = "u";
        break;
      case "DELETE":
        op = "d";
        break;
      default:
        throw new IllegalArgumentException("unknown type " + type);
    }
    JsonNode mysqlType = msg.get("mysqlType");
    JsonNode data = msg.get("data");
    JsonNode old = msg.get("old");
    for (int i = 0; i < data.size(); i++) {
      JsonNode row = data.get(i);
      ObjectNode before = null;
      ObjectNode after = null;
      if (op.equals("d")) {
        before = typed(row, mysqlType);
      } else {
        after = typed(row, mysqlType);
      }
      if (op.equals("u")) {
        ObjectNode image = row.deepCopy();
        JsonNode changed = old != null && !old.isNull() ? old.get(i) : null;
        if (changed != null) {
          image.setAll((ObjectNode) changed);
        }
        before = typed(image, mysqlType);
      }
      ObjectNode key = NODES.objectNode();
      ObjectNode image = after != null ? after : before;
      for (JsonNode pk : msg.path("pkNames")) {
        key.set(pk.asText(), image.get(pk.asText()));
      }
      ObjectNode value = NODES.objectNode();
      value.set("before", before == null ? NODES.nullNode() : before);
      value.set("after", after == null ? NODES.nullNode() : after);
      value.set("source", source(msg));
      value.put("op", op);
      value.set("ts_ms", msg.get("ts"));
      value.putNull("transaction");
      byte[] keyBytes = JSON.writeValueAsBytes(key);
      out.add(KeyValue.pair(keyBytes, JSON.writeValueAsBytes(value)));
      if (op.equals("d")) {
        out.add(KeyValue.pair(keyBytes, null));
      }
    }
    return out;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: CanalToDebezium BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC APPLICATION_ID");
      System.exit(2);
    }
    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[3]);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
    props.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/" + args[3]);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    props.put(StreamsConfig.producerPrefix(ProducerConfig.ACKS_CONFIG), "all");
    props.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 5);

    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(args[1], Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
        .flatMap(
            (key, value) -> {
              try {
                return convert(value);
              } catch (Exception e) {
                throw new IllegalArgumentException("cannot convert a Canal message: " + e, e);
              }
            })
        .to(args[2], Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));

    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  streams.close();
                  stopped.countDown();
                }));
    streams.setStateListener(
        (now, before) -> {
          if (now == KafkaStreams.State.RUNNING) {
            System.out.println("running");
            System.out.flush();
          } else if (now == KafkaStreams.State.ERROR) {
            System.out.println("error");
            System.out.flush();
            stopped.countDown();
          }
        });
    streams.start();
    stopped.await();
    if (streams.state() == KafkaStreams.State.ERROR) {
      System.exit(1);
    }
  }
}
