/**
 * One compiled TypeBox validator per schema object, made on first use and shared by everything
 * that checks values against schemas (tool arguments, the JSON files the library reads).
 */
import type { TSchema } from "typebox";
import { Compile, type Validator } from "typebox/compile";

const validators = new WeakMap<object, Validator>();

/** The compiled validator of `schema` (compiled once; kept as long as the schema object lives). */
export function validatorFor(schema: TSchema): Validator {
  let validator = validators.get(schema);
  if (validator === undefined) {
    validator = Compile(schema) as unknown as Validator;
    validators.set(schema, validator);
  }
  return validator;
}
