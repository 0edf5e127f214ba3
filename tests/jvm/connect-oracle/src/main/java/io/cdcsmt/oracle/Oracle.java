package io.cdcsmt.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

/**
 * Runs Kafka Connect / Debezium SMT chains on records, one job per stdin line.
 *
 * <p>A job is {@code {"chain": {Connect properties}, "records": [{"topic", "partition",
 * "timestamp", "key", "value", "headers": [[name, base64 | null]]}]}} where key and value
 * are JsonConverter text with schemas ({@code schemas.enable=true}) or null. The answer (one
 * stdout line) is {@code {"records": [...]}} in the same shape, values written back by
 * JsonConverter and headers by SimpleHeaderConverter as a Connect worker does; a record
 * JsonConverter cannot read or the chain fails on is {@code {"error": "Class: message"}}, one
 * it drops is absent; a chain that
 * cannot be configured answers {@code {"error": ...}}. One JVM serves a whole test session.
 * A job with {@code "runs"} is a benchmark instead (see {@link #bench}).
 */
public final class Oracle {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Oracle() {}

    /** A configured transformation with its predicate, as Connect's TransformationStage applies it. */
    private record Stage(Transformation<SourceRecord> transform, Predicate<SourceRecord> predicate, boolean negate) {
        SourceRecord apply(SourceRecord r) {
            if (predicate != null && predicate.test(r) == negate) {
                return r;
            }
            return transform.apply(r);
        }

        void close() {
            transform.close();
            if (predicate != null) {
                predicate.close();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer;
            try {
                answer = run(JSON.readTree(line));
            } catch (Exception e) {
                answer = JSON.createObjectNode();
                answer.put("error", describe(e));
            }
            out.write(JSON.writeValueAsString(answer));
            out.write('\n');
            out.flush();
        }
    }

    /**
     * Bench job ({@code "runs": n}): each run reads every record with JsonConverter, applies
     * the chain and writes key and value back to bytes, as a Connect worker's source task
     * does between poll and send; answers the process CPU nanoseconds of each run (garbage
     * collection and JIT threads included) and the records written by one.
     */
    private static ObjectNode bench(JsonNode job, List<Stage> stages) {
        JsonConverter keys = converter(true);
        JsonConverter values = converter(false);
        List<String> topics = new ArrayList<>();
        List<byte[]> keyBytes = new ArrayList<>();
        List<byte[]> valueBytes = new ArrayList<>();
        for (JsonNode rec : job.path("records")) {
            topics.add(rec.path("topic").asText());
            keyBytes.add(bytes(rec.get("key")));
            valueBytes.add(bytes(rec.get("value")));
        }
        com.sun.management.OperatingSystemMXBean cpu =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        ArrayNode runs = JSON.createArrayNode();
        long written = 0;
        for (int run = 0; run < job.path("runs").asInt(); run++) {
            written = 0;
            long start = cpu.getProcessCpuTime();
            for (int i = 0; i < topics.size(); i++) {
                String topic = topics.get(i);
                SchemaAndValue k = keys.toConnectData(topic, keyBytes.get(i));
                SchemaAndValue v = values.toConnectData(topic, valueBytes.get(i));
                SourceRecord r = new SourceRecord(
                        null, null, topic, 0, k.schema(), k.value(), v.schema(), v.value(), null, new ConnectHeaders());
                for (Stage s : stages) {
                    r = s.apply(r);
                    if (r == null) {
                        break;
                    }
                }
                if (r != null) {
                    keys.fromConnectData(r.topic(), r.keySchema(), r.key());
                    values.fromConnectData(r.topic(), r.valueSchema(), r.value());
                    written++;
                }
            }
            runs.add(cpu.getProcessCpuTime() - start);
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.set("cpu_ns", runs);
        answer.put("written", written);
        return answer;
    }

    private static ObjectNode run(JsonNode job) throws Exception {
        Map<String, String> props = new HashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = job.path("chain").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            props.put(e.getKey(), e.getValue().asText());
        }
        JsonConverter keys = converter(true);
        JsonConverter values = converter(false);
        SimpleHeaderConverter headers = new SimpleHeaderConverter();
        headers.configure(Map.of());
        List<Stage> stages = stages(props);
        if (job.has("runs")) {
            try {
                return bench(job, stages);
            } finally {
                for (Stage s : stages) {
                    s.close();
                }
            }
        }
        ArrayNode results = JSON.createArrayNode();
        try {
            for (JsonNode rec : job.path("records")) {
                String topic = rec.path("topic").asText();
                SourceRecord r;
                try {
                    r = toRecord(rec, topic, keys, values, headers);
                    for (Stage s : stages) {
                        r = s.apply(r);
                        if (r == null) {
                            break;
                        }
                    }
                } catch (Exception e) {
                    ObjectNode err = JSON.createObjectNode();
                    err.put("error", describe(e));
                    results.add(err);
                    continue;
                }
                if (r != null) {
                    results.add(fromRecord(r, keys, values, headers));
                }
            }
        } finally {
            for (Stage s : stages) {
                s.close();
            }
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.set("records", results);
        return answer;
    }

    private static JsonConverter converter(boolean isKey) {
        JsonConverter c = new JsonConverter();
        c.configure(Map.of("schemas.enable", "true"), isKey);
        return c;
    }

    private static SourceRecord toRecord(
            JsonNode rec, String topic, JsonConverter keys, JsonConverter values, SimpleHeaderConverter hc) {
        SchemaAndValue key = keys.toConnectData(topic, bytes(rec.get("key")));
        SchemaAndValue value = values.toConnectData(topic, bytes(rec.get("value")));
        ConnectHeaders headers = new ConnectHeaders();
        for (JsonNode h : rec.path("headers")) {
            String name = h.get(0).asText();
            byte[] raw = h.get(1).isNull() ? null : Base64.getDecoder().decode(h.get(1).asText());
            SchemaAndValue sv = hc.toConnectHeader(topic, name, raw);
            headers.add(name, sv);
        }
        Integer partition = rec.hasNonNull("partition") ? rec.get("partition").asInt() : 0;
        Long timestamp = rec.hasNonNull("timestamp") ? rec.get("timestamp").asLong() : null;
        return new SourceRecord(
                null, null, topic, partition, key.schema(), key.value(), value.schema(), value.value(), timestamp,
                headers);
    }

    private static ObjectNode fromRecord(
            ConnectRecord<?> r, JsonConverter keys, JsonConverter values, SimpleHeaderConverter hc) {
        ObjectNode o = JSON.createObjectNode();
        o.put("topic", r.topic());
        putText(o, "key", keys.fromConnectData(r.topic(), r.keySchema(), r.key()));
        putText(o, "value", values.fromConnectData(r.topic(), r.valueSchema(), r.value()));
        if (r.timestamp() != null) {
            o.put("timestamp", r.timestamp());
        }
        ArrayNode hs = o.putArray("headers");
        for (Header h : r.headers()) {
            ArrayNode pair = hs.addArray();
            pair.add(h.key());
            byte[] raw = hc.fromConnectHeader(r.topic(), h.key(), h.schema(), h.value());
            if (raw == null) {
                pair.addNull();
            } else {
                pair.add(Base64.getEncoder().encodeToString(raw));
            }
        }
        return o;
    }

    private static void putText(ObjectNode o, String field, byte[] raw) {
        if (raw == null) {
            o.putNull(field);
        } else {
            o.put(field, new String(raw, StandardCharsets.UTF_8));
        }
    }

    private static byte[] bytes(JsonNode text) {
        return text == null || text.isNull() ? null : text.asText().getBytes(StandardCharsets.UTF_8);
    }

    /** The chain's stages from Connect properties ({@code transforms}, {@code predicates}). */
    @SuppressWarnings("unchecked")
    private static List<Stage> stages(Map<String, String> props) throws Exception {
        Map<String, Predicate<SourceRecord>> predicates = new HashMap<>();
        for (String alias : aliases(props.get("predicates"))) {
            Predicate<SourceRecord> p = (Predicate<SourceRecord>) instance(props, "predicates." + alias + ".");
            p.configure(config(props, "predicates." + alias + "."));
            predicates.put(alias, p);
        }
        List<Stage> stages = new ArrayList<>();
        for (String alias : aliases(props.get("transforms"))) {
            String prefix = "transforms." + alias + ".";
            Transformation<SourceRecord> t = (Transformation<SourceRecord>) instance(props, prefix);
            Map<String, String> conf = config(props, prefix);
            String pname = conf.remove("predicate");
            boolean negate = Boolean.parseBoolean(conf.remove("negate"));
            t.configure(conf);
            Predicate<SourceRecord> p = null;
            if (pname != null) {
                p = predicates.get(pname);
                if (p == null) {
                    throw new IllegalArgumentException("unknown predicate " + pname);
                }
            }
            stages.add(new Stage(t, p, negate));
        }
        return stages;
    }

    private static List<String> aliases(String list) {
        List<String> out = new ArrayList<>();
        if (list != null) {
            for (String a : list.split(",")) {
                if (!a.isBlank()) {
                    out.add(a.trim());
                }
            }
        }
        return out;
    }

    private static Object instance(Map<String, String> props, String prefix) throws Exception {
        String type = props.get(prefix + "type");
        if (type == null) {
            throw new IllegalArgumentException("missing " + prefix + "type");
        }
        return Class.forName(type).getDeclaredConstructor().newInstance();
    }

    private static Map<String, String> config(Map<String, String> props, String prefix) {
        Map<String, String> conf = new HashMap<>();
        for (Map.Entry<String, String> e : props.entrySet()) {
            if (e.getKey().startsWith(prefix) && !e.getKey().equals(prefix + "type")) {
                conf.put(e.getKey().substring(prefix.length()), e.getValue());
            }
        }
        return conf;
    }

    private static String describe(Throwable e) {
        String msg = e.getClass().getSimpleName() + ": " + e.getMessage();
        if (Boolean.getBoolean("oracle.traces")) {
            StringWriter w = new StringWriter();
            e.printStackTrace(new PrintWriter(w));
            msg += "\n" + w;
        }
        return msg;
    }
}
