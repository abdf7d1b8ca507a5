/**
 * Route schemas compiled at a route's first use instead of at start-up: the
 * request validators (Ajv) and the response serializers (fast-json-stringify)
 * Fastify asks for when a route is registered.
 *
 * Why: both compile a schema into generated JavaScript (`new Function`), and V8
 * keeps each generated function's source text, its bytecode once it runs and
 * the closures around it for the life of the process. The server registers
 * about 60 response serializers and 45 validators, and a given workload uses a
 * handful (a drain: the batch submit, the counters and the worker socket).
 * Measured on a started server with nothing submitted (heap snapshot): the
 * serializers' generated source alone was 1.2 MB in 58 strings and the
 * validators' 0.35 MB in 45; compiled lazily the V8 heap after start-up is
 * 26.5 MB instead of 33.8 MB (19.9 MB used instead of 23.5). After 100,000
 * tasks (`npm run bench -- --sections=memory`, three runs each, alternating
 * with the eager build): VmRSS 102.0-103.5 MB at the end of the drain
 * instead of 104.8-106.8 MB, 90.1-91.3 MB idle instead of 91.0-93.7 MB.
 *
 * Contract: a wrapped validator or serializer behaves as the compiled one
 * from its first call on (a validator also carries the compiled one's
 * `errors` after each call, which Fastify reads). A schema that does not
 * compile throws at that first call instead of at start-up; the test suite
 * starts a server with `eagerSchemas` so that every schema is still compiled
 * by a test.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifySchemaCompiler } from 'fastify';

/** A compiled validator as Fastify calls it: true/false, with the errors of the last call on `errors`. */
export type Validator = ReturnType<FastifySchemaCompiler<unknown>>;

/** `compile` runs at the first call of the returned validator, once. */
export function lazyValidator(compile: () => Validator): Validator {
  let compiled: Validator | undefined;
  const validate: Validator = (data) => {
    compiled ??= compile();
    const result = compiled(data);
    validate.errors = compiled.errors;
    return result;
  };
  return validate;
}

/** `compile` runs at the first call of the returned serializer, once. */
export function lazySerializer(compile: () => (data: unknown) => string): (data: unknown) => string {
  let compiled: ((data: unknown) => string) | undefined;
  return (data) => (compiled ??= compile())(data);
}

type SerializerFactory = ReturnType<typeof SerializerSelector>;

/**
 * Fastify's default serializer factory (the one it uses when given none:
 * @fastify/fast-json-stringify-compiler), each route's serializer made lazy
 * unless `eager`. For Fastify's `schemaController.compilersFactory.buildSerializer`.
 */
export function buildSerializerFactory(eager: boolean): SerializerFactory {
  const defaultFactory = SerializerSelector();
  return (externalSchemas, serializerOpts) => {
    const compile = defaultFactory(externalSchemas, serializerOpts);
    return (route) => (eager ? compile(route) : lazySerializer(() => compile(route)));
  };
}
